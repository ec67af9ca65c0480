//! The `delete-session` Lambda function (`DeleteSessionFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::DELETE_SESSION`. Written by `cargo xtask derive`.

knowledge_aws::main!(DELETE_SESSION);
