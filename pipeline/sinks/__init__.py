"""Sinks: where a run's written records go after the run (a Hugging Face dataset, ...)."""
