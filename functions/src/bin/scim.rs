//! The `scim` Lambda function (`ScimFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::SCIM`. Written by `cargo xtask derive`.

knowledge_aws::main!(SCIM);
