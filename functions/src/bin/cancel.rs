//! The `cancel` Lambda function (`CancelFunction` in template.yaml); its row is
//! `knowledge_app::functions::CANCEL`.

knowledge_aws::main!(CANCEL);
