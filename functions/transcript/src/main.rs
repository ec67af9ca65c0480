//! The `transcript` endpoint's Lambda function (`TranscriptFunction` in template.yaml).

knowledge_aws::endpoint_main!(Transcript);
