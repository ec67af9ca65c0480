//! The admin routes' Lambda function (`AdminFunction` in template.yaml): every route under
//! `/api/admin`.

knowledge_aws::endpoint_main!(Admin);
