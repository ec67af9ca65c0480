//! The `memory` Lambda function (`MemoryFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::MEMORY`. Written by `cargo xtask derive`.

knowledge_aws::main!(MEMORY);
