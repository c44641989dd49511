"""The commands of `python -m backend`: `main` (parser and dataset, index, run, model commands), `imports`
(import-run, import-dataset, generate, delete-run, user-runs) and `store` (backup, backups, restore)."""
