//! The `sweep` Lambda function (`SweepFunction` in template.yaml); its row is
//! `knowledge_app::functions::SWEEP`.

knowledge_aws::main!(SWEEP);
