"""Sharing the work: who takes which item of a stage (a run alone takes all; runners take what
their claims win), and the loop's side of runners on several machines sharing one git remote."""
