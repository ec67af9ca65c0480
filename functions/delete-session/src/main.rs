//! The `delete-session` endpoint's Lambda function (`DeleteSessionFunction` in template.yaml).

knowledge_aws::endpoint_main!(DeleteSession);
