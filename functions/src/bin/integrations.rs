//! The `integrations` Lambda function (`IntegrationsFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::INTEGRATIONS`. Written by `cargo xtask derive`.

knowledge_aws::main!(INTEGRATIONS);
