//! The Lambda functions in-process, on moto (DynamoDB, Step Functions, Secrets Manager, S3,
//! SQS) on loopback: every sample event in `events/` fed to its function's handler, the DynamoDB
//! requests each endpoint makes counted, and the Step Functions start shown idempotent.
//! `scripts/test` starts moto and sets `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT`; without it each test
//! that needs moto begins by skipping itself (`knowledge_test_support::skip_without_dynamodb!`).
//!
//! The shared deployment and helpers are in `functions/support.rs`; the tests are grouped by
//! the function family they feed, one module each under `functions/`.

#[path = "functions/admin.rs"]
mod admin;
#[path = "functions/approvals.rs"]
mod approvals;
#[path = "functions/auth.rs"]
mod auth;
#[path = "functions/documents.rs"]
mod documents;
#[path = "functions/documents_sweep.rs"]
mod documents_sweep;
#[path = "functions/integrations.rs"]
mod integrations;
#[path = "functions/metrics.rs"]
mod metrics;
#[path = "functions/sessions.rs"]
mod sessions;
#[path = "functions/support.rs"]
mod support;
#[path = "functions/sweep.rs"]
mod sweep;
#[path = "functions/table.rs"]
mod table;
#[path = "functions/tasks.rs"]
mod tasks;
#[path = "functions/web.rs"]
mod web;
