//! The `switch-org` endpoint's Lambda function (`SwitchOrgFunction` in template.yaml).

knowledge_aws::endpoint_main!(SwitchOrg);
