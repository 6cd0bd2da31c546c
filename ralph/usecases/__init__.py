"""The use cases the CLI calls: every state command and every read, as plain functions over a
repository root. Nothing here prints or parses arguments."""
