"""Where the plan lives: git, the lock, atomic files, the validity cache and the transaction that
ties them together."""
