"""The FastAPI app: the single source of truth for every remote surface."""
