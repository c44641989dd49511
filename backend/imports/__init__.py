"""Bringing a user's own work into the store: predictions as runs (`predictions`), datasets
(`datasets`), read from CSV/TSV/JSONL/JSON/Parquet files or DataFrames (`files`), matched to
examples by id or normalised text (`matching`), with columns guessed or mapped (`columns`), and a
validation report before anything is written (`check_report`)."""
