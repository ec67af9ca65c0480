//! The `openapi` Lambda function (`OpenapiFunction` in template.yaml); its row is
//! `knowledge_app::functions::OPENAPI`.

knowledge_aws::main!(OPENAPI);
