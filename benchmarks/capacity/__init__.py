"""The capacity benchmark: what each operation costs each component (``python -m benchmarks.capacity``)."""
