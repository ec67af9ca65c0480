//! The `logout` Lambda function (`LogoutFunction` in template.yaml); its row is
//! `knowledge_app::functions::LOGOUT`.

knowledge_aws::main!(LOGOUT);
