"""The command line: parse arguments, call ralph.ops or the loop, print. Nothing else lives here."""
