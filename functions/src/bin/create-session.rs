//! The `create-session` Lambda function (`CreateSessionFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::CREATE_SESSION`. Written by `cargo xtask derive`.

knowledge_aws::main!(CREATE_SESSION);
