//! The `cancel` Lambda function (`CancelFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::CANCEL`. Written by `cargo xtask derive`.

knowledge_aws::main!(CANCEL);
