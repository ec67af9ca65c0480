//! The `me` Lambda function (`MeFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::ME`. Written by `cargo xtask derive`.

knowledge_aws::main!(ME);
