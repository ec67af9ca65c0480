//! The `web` function (`WebFunction` in template.yaml): the browser app's page and assets,
//! built into the binary.

knowledge_aws::endpoint_main!(Web);
