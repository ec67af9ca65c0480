//! The `sso-login` Lambda function (`SsoLoginFunction` in template.yaml); its row is
//! `knowledge_app::functions::SSO_LOGIN`.

knowledge_aws::main!(SSO_LOGIN);
