//! The `signin-link` Lambda function (`SigninLinkFunction` in template.yaml); its row is
//! `knowledge_assembly::functions::SIGNIN_LINK`. Written by `cargo xtask derive`.

knowledge_aws::main!(SIGNIN_LINK);
