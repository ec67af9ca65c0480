//! The `create-session` endpoint's Lambda function (`CreateSessionFunction` in template.yaml).

knowledge_aws::endpoint_main!(CreateSession);
