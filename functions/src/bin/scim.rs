//! The `scim` Lambda function (`ScimFunction` in template.yaml); its row is
//! `knowledge_app::functions::SCIM`.

knowledge_aws::main!(SCIM);
