//! The `web` Lambda function (`WebFunction` in template.yaml); its row is
//! `knowledge_app::functions::WEB`.

knowledge_aws::main!(WEB);
