"""Command-line entry points: ``quipu`` and ``quipu-server``."""
