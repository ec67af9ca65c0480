//! The `titles` Lambda function (`TitlesFunction` in template.yaml): renaming a session and
//! finding sessions by title; its row is `knowledge_app::functions::TITLES`.

knowledge_aws::main!(TITLES);
