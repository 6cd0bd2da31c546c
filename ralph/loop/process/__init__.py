"""The processes the loop starts and owns: the supervisor that runs agents, gates and hooks and can
stop them all, the bubblewrap fence around them, the reaper of what escapes the process group,
stop signals, and the quality gate (its Makefile read as text, never run to probe it)."""
