//! The `logout` endpoint's Lambda function (`LogoutFunction` in template.yaml).

knowledge_aws::endpoint_main!(Logout);
