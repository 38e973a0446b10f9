//! The token store file, `mcp-auth.json`: read, updated under a lock, written atomically.
