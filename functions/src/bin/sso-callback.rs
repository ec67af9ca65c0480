//! The `sso-callback` Lambda function (`SsoCallbackFunction` in template.yaml); its row is
//! `knowledge_app::functions::SSO_CALLBACK`.

knowledge_aws::main!(SSO_CALLBACK);
