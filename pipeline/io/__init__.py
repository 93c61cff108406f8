"""Writing outputs: the canonical Parquet writer, the item and record indexes, per-shard counts and
the one shape of rejected and loss rows (run_tables)."""
