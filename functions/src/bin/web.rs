//! The `web` Lambda function (`WebFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::WEB`. Written by `cargo xtask derive`.

knowledge_aws::main!(WEB);
