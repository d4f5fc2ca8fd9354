"""The MCP acceptance suite (`just mcp test`): the official SDK client over HTTP and stdio."""
