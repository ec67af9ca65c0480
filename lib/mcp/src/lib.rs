//! Remote MCP servers over streamable HTTP as integrations, through `rmcp`.
