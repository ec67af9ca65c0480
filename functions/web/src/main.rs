//! The `web` function (`WebFunction` in template.yaml): the browser app's page and assets,
//! built into the binary.

use knowledge_http::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    knowledge_aws::run_http(Endpoint::Web).await
}
