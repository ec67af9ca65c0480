//! The `usage` Lambda function (`UsageFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::USAGE`. Written by `cargo xtask derive`.

knowledge_aws::main!(USAGE);
