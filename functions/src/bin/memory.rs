//! The `memory` Lambda function (`MemoryFunction` in template.yaml): a member's own memory
//! (what the agent keeps, forgetting, the switch, the export); its row is
//! `knowledge_app::functions::MEMORY`.

knowledge_aws::main!(MEMORY);
