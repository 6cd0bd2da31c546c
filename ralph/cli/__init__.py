"""The command line: parse arguments, call ralph.usecases or the loop, print. Nothing else lives here."""
