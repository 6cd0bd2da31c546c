"""The work tree a stage acts in: what changed in it since the loop's last step and who changed it,
the plan as a stage reads and writes it under the lock, what a person changed beside the run, and
the detached checkouts that VERIFY lends its verifiers."""
