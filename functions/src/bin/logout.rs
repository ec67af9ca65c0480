//! The `logout` Lambda function (`LogoutFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::LOGOUT`. Written by `cargo xtask derive`.

knowledge_aws::main!(LOGOUT);
