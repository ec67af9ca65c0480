//! The agent workflow's `LoadTurn` Task (`LoadTurnFunction` in template.yaml).

knowledge_aws::task_main!(LoadTurn);
