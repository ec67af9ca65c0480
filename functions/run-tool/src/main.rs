//! The agent workflow's `RunTool` Task (`RunToolFunction` in template.yaml).

knowledge_aws::task_main!(RunTool);
