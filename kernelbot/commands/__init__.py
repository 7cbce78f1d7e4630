"""One module per CLI command; each exposes `run(...) -> int` taking typed arguments."""
