//! The admin routes' Lambda function (`AdminFunction` in template.yaml): every route under
//! `/api/admin`.

use knowledge_http::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    knowledge_aws::run_http(Endpoint::Admin).await
}
