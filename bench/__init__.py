"""Benchmarks and seeded data generators for quipu (not part of the installed package)."""
