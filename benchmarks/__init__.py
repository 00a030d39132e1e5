"""nda's benchmark suite: ``python -m benchmarks [--quick] [--json PATH]`` (see run.py)."""
