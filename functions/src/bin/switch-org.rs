//! The `switch-org` Lambda function (`SwitchOrgFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::SWITCH_ORG`. Written by `cargo xtask derive`.

knowledge_aws::main!(SWITCH_ORG);
