//! The `me` endpoint's Lambda function (`MeFunction` in template.yaml).

knowledge_aws::endpoint_main!(Me);
