"""Reproductions of hostile and careless input, and of load, that once broke the server (issue 15)."""
