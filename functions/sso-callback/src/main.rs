//! The `sso-callback` endpoint's Lambda function (`SsoCallbackFunction` in template.yaml).

use knowledge_http::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    knowledge_aws::run_http(Endpoint::SsoCallback).await
}
