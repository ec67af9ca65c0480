//! Core of the conversational knowledge service: identifiers, domain, use cases and ports.
//! Nothing here knows of HTTP or AWS; adapters live in the other crates.

pub mod admin;
pub mod agent;
pub mod clock;
pub mod conversation;
pub mod domain;
pub mod error;
pub mod fault;
pub mod ids;
pub mod integrations;
pub mod limits;
pub mod ports;
pub mod pricing;
pub mod scim;
pub mod seal;
pub mod service;
pub mod signin;
pub mod sso;
pub mod steps;
#[cfg(feature = "testing")]
pub mod testing;

pub use error::CoreError;
