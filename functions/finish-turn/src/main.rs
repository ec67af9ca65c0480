//! The agent workflow's `FinishTurn` Task (`FinishTurnFunction` in template.yaml).

knowledge_aws::task_main!(FinishTurn);
