//! The agent workflow's `LoadTurn` Task (`LoadTurnFunction` in template.yaml).

use knowledge_aws::Handler;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    knowledge_aws::run_task(Handler::LoadTurn).await
}
