//! The `indexer` Lambda function (`IndexerFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::INDEXER`. Written by `cargo xtask derive`.

knowledge_aws::main!(INDEXER);
