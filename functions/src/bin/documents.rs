//! The `documents` Lambda function (`DocumentsFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::DOCUMENTS`. Written by `cargo xtask derive`.

knowledge_aws::main!(DOCUMENTS);
