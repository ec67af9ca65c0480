//! The agent workflow's `CallAgent` Task (`CallAgentFunction` in template.yaml).

knowledge_aws::task_main!(CallAgent);
