//! The `openapi` Lambda function (`OpenapiFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::OPENAPI`. Written by `cargo xtask derive`.

knowledge_aws::main!(OPENAPI);
