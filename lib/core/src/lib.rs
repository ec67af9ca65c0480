//! Core of the conversational knowledge service: identifiers, domain, use cases and ports.
//! Nothing here knows of HTTP or AWS: the domain (`domain`, `ids`, `clock`, `conversation`), the
//! ports (`ports`), the use cases (`service`, `steps`, `admin`, `scim`, `sso`, `signin`,
//! `groups`), the policy they apply (`policy`) and the adapters that need nothing outside
//! (`adapters`); the other adapters live in the crates named after their technology.

pub mod adapters;
pub mod admin;
pub mod clock;
pub mod connections;
pub mod conversation;
pub mod documents;
pub mod domain;
pub mod error;
pub mod fault;
pub mod groups;
pub mod ids;
pub mod memory;
pub mod policy;
pub mod ports;
pub mod scim;
pub mod seal;
pub mod service;
pub mod signin;
pub mod sso;
pub mod steps;
pub mod telemetry;
#[cfg(feature = "testing")]
pub mod testing;
pub mod trace;
pub mod vault;

pub use error::CoreError;
