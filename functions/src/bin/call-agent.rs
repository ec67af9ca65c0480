//! The `call-agent` Lambda function (`CallAgentFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::CALL_AGENT`. Written by `cargo xtask derive`.

knowledge_aws::main!(CALL_AGENT);
