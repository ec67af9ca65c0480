//! The `list-sessions` endpoint's Lambda function (`ListSessionsFunction` in template.yaml).

knowledge_aws::endpoint_main!(ListSessions);
