//! The SCIM 2.0 routes' Lambda function (`ScimFunction` in template.yaml).

knowledge_aws::endpoint_main!(Scim);
