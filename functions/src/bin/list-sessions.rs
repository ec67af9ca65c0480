//! The `list-sessions` Lambda function (`ListSessionsFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::LIST_SESSIONS`. Written by `cargo xtask derive`.

knowledge_aws::main!(LIST_SESSIONS);
