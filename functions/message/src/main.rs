//! The `message` endpoint's Lambda function (`MessageFunction` in template.yaml).

knowledge_aws::endpoint_main!(Message);
