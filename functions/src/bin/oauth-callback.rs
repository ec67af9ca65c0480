//! The `oauth-callback` Lambda function (`OauthCallbackFunction` in template.yaml); its row is
//! `knowledge_app::functions::OAUTH_CALLBACK`.

knowledge_aws::main!(OAUTH_CALLBACK);
