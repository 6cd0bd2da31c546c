"""The construct loop, in rooms named for their jobs. Imports run downward only, in this order:

- `construct`, `preflight`, `dryrun`: the driver of `ralph construct`, what it refuses to start
  for, and what the next iteration would run.
- `stages/`: one module per stage and the runs a stage makes of its items.
- `tree/`: the work tree a stage acts in, its commits and the checkouts lent to verifiers.
- `share/`: who takes which item, alone or with runners sharing a git remote.
- `runs/`: one agent run: its prompt, its process, what it cost and what it was allowed to do.
- `process/`: the children the loop starts (agents, gates, hooks), their fence and their stop.
- `observe/`: what a person sees of a run: console, journal, logs, watch, the report's data."""
