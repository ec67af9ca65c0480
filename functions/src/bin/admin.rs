//! The `admin` Lambda function (`AdminFunction` in template.yaml); its row is
//! `knowledge_app::functions::ADMIN`.

knowledge_aws::main!(ADMIN);
