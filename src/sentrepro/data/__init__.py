"""Data layer: download, verify, extract and parse the benchmark and training files."""
