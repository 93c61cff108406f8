"""Reading inputs and writing outputs: JSONL chunks, Parquet, rejected and loss files."""
