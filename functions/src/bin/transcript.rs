//! The `transcript` Lambda function (`TranscriptFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::TRANSCRIPT`. Written by `cargo xtask derive`.

knowledge_aws::main!(TRANSCRIPT);
