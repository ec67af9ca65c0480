//! The `signin-link` endpoint's Lambda function (`SigninLinkFunction` in template.yaml).

knowledge_aws::endpoint_main!(SignInLink);
