//! The agent workflow's `Terminate` Task (`TerminateFunction` in template.yaml).

knowledge_aws::task_main!(Terminate);
