"""Logic memory: a zpm-compatible Prolog knowledge base on SWI-Prolog (spec logic-memory.md)."""
