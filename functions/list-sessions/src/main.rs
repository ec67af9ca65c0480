//! The `list-sessions` endpoint's Lambda function (`ListSessionsFunction` in template.yaml).

use knowledge_http::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    knowledge_aws::run_http(Endpoint::ListSessions).await
}
