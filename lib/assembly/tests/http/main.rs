//! The HTTP suite: the interface tested where it stands: requests to the assembled router in process
//! (tower's `oneshot`), over the transient store (the default), SQLite or DynamoDB on moto
//! (`KNOWLEDGE_TEST_STORE`), with the in-process workflow answering turns. Requests,
//! cookies, accounts, limits, the state table of sessions and turns, SCIM, the admin API,
//! single sign-on against a real OpenID provider, integrations (MCP servers on loopback) and
//! the outbound guard, the real provider adapters against a scripted fake provider, the
//! browser app's files, and the OpenAPI document as served.
//! What needs a socket, a process or a kill is tested in `lib/local/tests/api`.

mod account;
mod admin;
mod admin_groups;
mod approvals;
mod caps;
mod cookies;
mod documents;
mod documents_agent;
mod documents_folder;
mod egress;
mod lifecycle;
mod limits;
mod mcp;
mod memory;
mod oauth;
mod openapi;
mod providers;
mod requests;
mod scim;
mod sso;
mod sso_attacks;
mod support;
mod titles;
mod tool_rules;
mod usage;
mod web;
