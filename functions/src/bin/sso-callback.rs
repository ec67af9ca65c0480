//! The `sso-callback` Lambda function (`SsoCallbackFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::SSO_CALLBACK`. Written by `cargo xtask derive`.

knowledge_aws::main!(SSO_CALLBACK);
