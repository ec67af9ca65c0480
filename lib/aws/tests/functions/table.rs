//! What holds for every function of the table: its binary, event and template resource under
//! one name, its own routes only, the secrets it reads, and the private destinations refused.

use std::collections::BTreeSet;

use knowledge_aws::{ColdStart, ConfigError, Env, Handler, Parts, functions};
use tower::ServiceExt;

use crate::support::{Deployment, pascal, repo_file};

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

#[test]
fn every_function_has_its_binary_event_and_template_resource_under_one_name() {
    let template = repo_file("template.yaml");
    let mut names = BTreeSet::new();
    for function in functions::ALL {
        let name = function.name;
        assert!(names.insert(name), "{name} has two rows");
        let row = name.to_uppercase().replace('-', "_");
        let binary = repo_file(&format!("functions/src/bin/{name}.rs"));
        assert!(
            binary.contains(&format!("knowledge_aws::main!({row});")),
            "{name}"
        );
        repo_file(&format!("events/{name}.json"));
        let resource = format!("  {}Function:\n", pascal(name));
        assert!(
            template.contains(&resource),
            "template.yaml lacks {resource}"
        );
        assert!(template.contains(&format!("Binary: {name}\n")), "{name}");
    }
    // And nothing is declared that has no row.
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for entry in std::fs::read_dir(root.join("functions/src/bin")).unwrap() {
        let file = entry.unwrap().file_name().into_string().unwrap();
        let name = file.strip_suffix(".rs").unwrap();
        assert!(names.contains(name), "functions/src/bin/{file} has no row");
    }
    for line in template
        .lines()
        .filter(|l| l.trim_start().starts_with("Binary: "))
    {
        let name = line.trim_start().trim_start_matches("Binary: ");
        assert!(
            names.contains(name),
            "template.yaml builds {name}, which has no row"
        );
    }
    // Every Task of the state machine gets its function's ARN.
    for h in Handler::ALL {
        assert!(repo_file("infra/statemachine/agent.asl.json").contains(&h.resource()));
        let substitution = format!("{0}FunctionArn: !GetAtt {0}Function.Arn", h.name());
        assert!(template.contains(&substitution), "{substitution}");
    }
}

#[test]
fn every_function_refuses_private_destinations_unless_the_deployment_says_otherwise() {
    let template = repo_file("template.yaml");
    let globals =
        &template[template.find("\nGlobals:").unwrap()..template.find("\nResources:").unwrap()];
    assert!(
        globals.contains("KNOWLEDGE_ALLOW_PRIVATE_DESTINATIONS: !Ref AllowPrivateDestinations"),
        "{globals}"
    );
    let parameter = &template[template.find("  AllowPrivateDestinations:").unwrap()..];
    let parameter = &parameter[..parameter.find("\n  AppOrigin:").unwrap()];
    assert!(parameter.contains("Default: \"false\""), "{parameter}");
    // Unset, a function's environment refuses them too.
    assert_eq!(
        knowledge_aws::config::Env::default().egress,
        knowledge_egress::Egress::PUBLIC_ONLY
    );
}
