"""The DuckDB store: schema, connections, the transactional writer and read-only query functions."""
