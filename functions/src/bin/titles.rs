//! The `titles` Lambda function (`TitlesFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::TITLES`. Written by `cargo xtask derive`.

knowledge_aws::main!(TITLES);
