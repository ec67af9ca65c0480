//! The `test-integration` Lambda function (`TestIntegrationFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::TEST_INTEGRATION`. Written by `cargo xtask derive`.

knowledge_aws::main!(TEST_INTEGRATION);
