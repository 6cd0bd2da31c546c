"""The stages: PLAN, INVESTIGATE, BUILD (alone or in parallel worktrees), VERIFY, DECOMPOSE, CHECK
and DRAFT, one module each, with what they share: the workspace a stage works with, the job one
agent run takes, and a stage's runs of a job (waited through limits, retried, their errors judged
by reach). Each stage is declared in ralph.plan.stage_declarations, and the loop finds its module
here by that declaration (modules.py). A stage decides what its items came to; the rooms below it
do the work."""
