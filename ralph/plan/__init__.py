"""The plan and its rules: plan.jsonl as a document of lines, its records and their validation,
loading, the transitions of `Plan`, scheduling and stage detection. Pure: no files, no git."""
