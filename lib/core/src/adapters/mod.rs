//! Adapters built into the core, which need nothing outside it: the deterministic agent that
//! answers without a provider, and integrations fixed when the process starts. The others live
//! in the crates named after their technology.

pub mod agent;
pub mod integrations;
