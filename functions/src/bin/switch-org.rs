//! The `switch-org` Lambda function (`SwitchOrgFunction` in template.yaml); its row is
//! `knowledge_app::functions::SWITCH_ORG`.

knowledge_aws::main!(SWITCH_ORG);
