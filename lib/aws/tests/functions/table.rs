//! What holds for every function of the table: its own routes only, and the secrets it reads.
//! Its binary, template resource and policy derive from its row (xtask/tests/derived.rs).

use knowledge_aws::{ColdStart, ConfigError, Env, Parts, functions};
use tower::ServiceExt;

use crate::support::Deployment;

#[tokio::test]
async fn a_function_answers_another_endpoints_request_as_an_unknown_route() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let response = d
        .router(functions::TRANSCRIPT)
        .await
        .oneshot(d.event(functions::CREATE_SESSION))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    let response = d
        .router(functions::TRANSCRIPT)
        .await
        .oneshot(d.event(functions::SWITCH_ORG))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 404);
    assert!(d.executions().await.is_empty());
}

#[tokio::test]
async fn only_the_functions_that_use_a_key_read_its_secret() {
    knowledge_test_support::skip_without_dynamodb!();
    let d = Deployment::new().await;
    let without_keys = Env {
        signing_key_secret: None,
        sealing_key_secret: None,
        ..d.env.clone()
    };
    let load = |function| {
        ColdStart::load(
            Parts::of(function),
            &d.shared,
            &without_keys,
            d.counter.clone(),
        )
    };
    // LoadTurn asks no agent and reaches no integration: it needs no key.
    assert!(load(functions::LOAD_TURN).await.is_ok());
    let missing = |r: Result<ColdStart, ConfigError>| match r {
        Err(ConfigError::Missing(var)) => var,
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("started without its key"),
    };
    let message = load(functions::MESSAGE).await;
    assert_eq!(missing(message), "SIGNING_KEY_SECRET_ARN");
    let tool = load(functions::RUN_TOOL).await;
    assert_eq!(missing(tool), "SEALING_KEY_SECRET_ARN");
    // SCIM authenticates by bearer token, never a cookie, but opens a removed member's OAuth
    // grants to revoke them.
    assert_eq!(
        missing(load(functions::SCIM).await),
        "SEALING_KEY_SECRET_ARN"
    );
    let scim_keys = Env {
        sealing_key_secret: d.env.sealing_key_secret.clone(),
        ..without_keys.clone()
    };
    let scim = ColdStart::load(
        Parts::of(functions::SCIM),
        &d.shared,
        &scim_keys,
        d.counter.clone(),
    );
    let response = (scim.await.unwrap().router().unwrap())
        .oneshot(d.event(functions::SCIM))
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
}
