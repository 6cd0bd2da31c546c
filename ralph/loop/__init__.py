"""The construct loop: settings, process supervision, agent runs, context pressure, the gate,
prompts, the journal and console, the workspace stages act in, one module per stage."""
