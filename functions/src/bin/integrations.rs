//! The `integrations` Lambda function (`IntegrationsFunction` in template.yaml); its row is
//! `knowledge_app::functions::INTEGRATIONS`.

knowledge_aws::main!(INTEGRATIONS);
