//! Integration tests of the local service: the real HTTP server on an ephemeral loopback port,
//! over a real store in a temporary directory or table. `KNOWLEDGE_TEST_STORE` picks the store
//! (`sqlite`, the default, or `dynamodb` on the endpoint in `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT`);
//! `scripts/test` runs this binary on both.

mod account;
mod admin;
mod app;
mod binary;
mod concurrency;
mod connections;
mod cookies;
mod crashes;
mod durability;
mod egress;
mod handover;
mod lifecycle;
mod limits;
mod mcp;
mod openapi;
mod providers;
mod requests;
mod runs;
mod scim;
mod serve;
pub(crate) mod sso;
mod sso_attacks;
mod support;
mod sweeps;
mod workflow;
