//! The `finish-turn` Lambda function (`FinishTurnFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::FINISH_TURN`. Written by `cargo xtask derive`.

knowledge_aws::main!(FINISH_TURN);
