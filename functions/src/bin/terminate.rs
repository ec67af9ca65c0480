//! The `terminate` Lambda function (`TerminateFunction` in template.yaml); its row is
//! `knowledge_app::functions::TERMINATE`.

knowledge_aws::main!(TERMINATE);
