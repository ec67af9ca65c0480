//! The `load-turn` Lambda function (`LoadTurnFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::LOAD_TURN`. Written by `cargo xtask derive`.

knowledge_aws::main!(LOAD_TURN);
