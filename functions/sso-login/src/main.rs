//! The `sso-login` endpoint's Lambda function (`SsoLoginFunction` in template.yaml).

knowledge_aws::endpoint_main!(SsoLogin);
