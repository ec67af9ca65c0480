//! The `signin-link` endpoint's Lambda function (`SigninLinkFunction` in template.yaml).

use knowledge_http::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    knowledge_aws::run_http(Endpoint::SignInLink).await
}
