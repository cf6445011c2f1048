"""MCP adapters: the server agents talk to (``pflow-structure serve``); the only importers of ``mcp``."""
