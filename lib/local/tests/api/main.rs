//! Integration tests of the local service that need a socket, a process or a kill: the real
//! HTTP server on an ephemeral loopback port, the `knowledge` binary, crashes, durability,
//! connections, concurrency and workflow runs, over a real store in a temporary directory or
//! table. The HTTP suite is tested in process, in `lib/assembly/tests/http`.
//! `KNOWLEDGE_TEST_STORE` picks the store (`sqlite`, the default, or `dynamodb` on the endpoint
//! in `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT`); `scripts/test` runs this binary on both.

mod approvals_crash;
mod binary;
mod concurrency;
mod connections;
mod crashes;
mod documents_crash;
mod durability;
mod handover;
mod hybrid;
mod metrics;
mod revocation;
mod runs;
mod serve;
mod sso;
mod support;
mod sweeps;
mod traces;
mod workflow;
