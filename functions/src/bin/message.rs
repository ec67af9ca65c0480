//! The `message` Lambda function (`MessageFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::MESSAGE`. Written by `cargo xtask derive`.

knowledge_aws::main!(MESSAGE);
