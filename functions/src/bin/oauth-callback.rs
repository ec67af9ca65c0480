//! The `oauth-callback` Lambda function (`OauthCallbackFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::OAUTH_CALLBACK`. Written by `cargo xtask derive`.

knowledge_aws::main!(OAUTH_CALLBACK);
