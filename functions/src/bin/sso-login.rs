//! The `sso-login` Lambda function (`SsoLoginFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::SSO_LOGIN`. Written by `cargo xtask derive`.

knowledge_aws::main!(SSO_LOGIN);
