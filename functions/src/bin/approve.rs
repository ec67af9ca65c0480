//! The `approve` Lambda function (`ApproveFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::APPROVE`. Written by `cargo xtask derive`.

knowledge_aws::main!(APPROVE);
