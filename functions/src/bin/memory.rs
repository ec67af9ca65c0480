//! The `memory` Lambda function (`MemoryFunction` in template.yaml); its row is
//! `knowledge_app::functions::MEMORY`. Written by `cargo xtask derive`.

knowledge_aws::main!(MEMORY);
