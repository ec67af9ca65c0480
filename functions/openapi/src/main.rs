//! The OpenAPI document's Lambda function (`OpenapiFunction` in template.yaml).

knowledge_aws::endpoint_main!(OpenApi);
