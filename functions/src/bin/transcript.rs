//! The `transcript` Lambda function (`TranscriptFunction` in template.yaml); its row is
//! `knowledge_app::functions::TRANSCRIPT`.

knowledge_aws::main!(TRANSCRIPT);
