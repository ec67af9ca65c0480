//! The `sweep` Lambda function (`SweepFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::SWEEP`. Written by `cargo xtask derive`.

knowledge_aws::main!(SWEEP);
