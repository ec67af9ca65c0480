//! The HTTP contract, tested where it stands: requests to the assembled router in process
//! (tower's `oneshot`), over the in-memory store, SQLite or DynamoDB on moto
//! (`KNOWLEDGE_CONTRACT_STORE`), with the in-process workflow answering turns. Requests, cookies, accounts, limits, SCIM, the
//! admin API, single sign-on against a real OpenID provider, and the OpenAPI document as served.
//! What needs a socket, a process or a kill is tested in `lib/local/tests/api`.

mod account;
mod admin;
mod cookies;
mod limits;
mod openapi;
mod requests;
mod scim;
mod sso;
mod sso_attacks;
mod support;
