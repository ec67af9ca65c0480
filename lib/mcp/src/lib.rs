//! Remote MCP servers over streamable HTTP as integrations, through `rmcp`.
//!
//! [`McpIntegration`] is one server: every `tools`/`call` opens an MCP session (initialize),
//! does its work and closes it, so no connection outlives a Lambda invocation.
//! [`StoredIntegrations`] builds the integrations an organisation connected, from the store,
//! with each member's own sealed credential where the integration needs one.

mod integration;
mod names;
mod stored;
#[cfg(feature = "test-server")]
pub mod test_server;

pub use integration::{Credential, GrantCredential, McpHttp, McpIntegration, Timeouts};
pub use names::{MAX_TOOL_NAME, exposed_tool_name};
pub use stored::{StoredIntegrations, member_credential};
