"""One agent run: the stage prompt rendered from its template (and what judges a build read from
the commit the run started on), the agent's process streamed and priced, its context pressure and
compaction, rate limits waited out, and what the stage's agent was allowed to change."""
