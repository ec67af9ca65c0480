//! The SCIM 2.0 routes' Lambda function (`ScimFunction` in template.yaml).

use knowledge_http::Endpoint;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    knowledge_aws::run_http(Endpoint::Scim).await
}
