//! The agent workflow's `FinishTurn` Task (`FinishTurnFunction` in template.yaml).

use knowledge_aws::Handler;

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    knowledge_aws::run_task(Handler::FinishTurn).await
}
