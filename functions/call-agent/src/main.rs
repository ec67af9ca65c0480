//! The agent workflow's `CallAgent` Task (`CallAgentFunction` in template.yaml).

use knowledge_aws::Handler;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    knowledge_aws::run_task(Handler::CallAgent).await
}
