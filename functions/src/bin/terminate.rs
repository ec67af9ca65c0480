//! The `terminate` Lambda function (`TerminateFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::TERMINATE`. Written by `cargo xtask derive`.

knowledge_aws::main!(TERMINATE);
