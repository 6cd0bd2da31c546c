"""What a person sees of a run: the console and its live view, the journal of events, the log
folder ralph decided at start, `ralph watch`, and the data of the final report."""
