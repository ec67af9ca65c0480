//! The `me` Lambda function (`MeFunction` in template.yaml); its row is
//! `knowledge_app::functions::ME`.

knowledge_aws::main!(ME);
