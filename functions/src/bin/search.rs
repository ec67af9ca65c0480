//! The `search` Lambda function (`SearchFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::SEARCH`. Written by `cargo xtask derive`.

knowledge_aws::main!(SEARCH);
