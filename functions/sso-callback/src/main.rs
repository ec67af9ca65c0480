//! The `sso-callback` endpoint's Lambda function (`SsoCallbackFunction` in template.yaml).

knowledge_aws::endpoint_main!(SsoCallback);
