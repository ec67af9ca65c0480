//! The `admin` Lambda function (`AdminFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::ADMIN`. Written by `cargo xtask derive`.

knowledge_aws::main!(ADMIN);
