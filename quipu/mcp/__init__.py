"""The MCP adapter: one tool registry, dispatched in process into the REST app."""
