//! The `sso-login` endpoint's Lambda function (`SsoLoginFunction` in template.yaml).

use knowledge_http::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    knowledge_aws::run_http(Endpoint::SsoLogin).await
}
