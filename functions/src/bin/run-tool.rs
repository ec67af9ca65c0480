//! The `run-tool` Lambda function (`RunToolFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::RUN_TOOL`. Written by `cargo xtask derive`.

knowledge_aws::main!(RUN_TOOL);
