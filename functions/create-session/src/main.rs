//! The `create-session` endpoint's Lambda function (`CreateSessionFunction` in template.yaml).

use knowledge_http::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    knowledge_aws::run_http(Endpoint::CreateSession).await
}
