"""ralph: drive a coding agent against a spec, with all state in a git-committed plan.jsonl."""

__version__ = "0.1.0"
