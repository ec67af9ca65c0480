//! The `usage` Lambda function (`UsageFunction` in template.yaml): a member's own usage, by
//! day and by model, against their allowance; its row is `knowledge_app::functions::USAGE`.

knowledge_aws::main!(USAGE);
