//! Integration tests of the local service: the real HTTP server on an ephemeral loopback port,
//! over a real SQLite store in a temporary directory.

mod concurrency;
mod durability;
mod lifecycle;
mod limits;
mod requests;
mod runs;
mod support;
mod workflow;
