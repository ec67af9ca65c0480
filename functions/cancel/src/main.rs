//! The `cancel` endpoint's Lambda function (`CancelFunction` in template.yaml).

knowledge_aws::endpoint_main!(Cancel);
