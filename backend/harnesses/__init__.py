"""The big evaluation harnesses, both ways: a stored dataset written out as an lm-evaluation-harness task and an
Inspect AI task (`tasks`), and their per-sample logs read back as rows for `import-run` (`logs`)."""
