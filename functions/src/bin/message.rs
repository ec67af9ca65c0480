//! The `message` Lambda function (`MessageFunction` in template.yaml); its row is
//! `knowledge_app::functions::MESSAGE`.

knowledge_aws::main!(MESSAGE);
