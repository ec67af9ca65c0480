//! The reference paths and `Parameters` templates: what they read, write and refuse.

use super::*;
use serde_json::json;

#[test]
fn paths_read_fields_and_indexes() {
    let data = json!({"a": {"b": [10, {"c": true}]}});
    assert_eq!(Path::parse("$").unwrap().get(&data), Some(&data));
    assert_eq!(
        Path::parse("$.a.b[1].c").unwrap().get(&data),
        Some(&json!(true))
    );
    assert_eq!(Path::parse("$.a.x").unwrap().get(&data), None);
}

#[test]
fn unsupported_paths_are_refused_with_a_reason() {
    for bad in [
        "a.b",
        "$$.Execution.Id",
        "$.a[*]",
        "$..a",
        "$.a[?(@.b)]",
        "$['a']",
    ] {
        assert!(Path::parse(bad).is_err(), "{bad} should be refused");
    }
}

#[test]
fn result_paths_create_the_objects_on_the_way() {
    let mut data = json!({"keep": 1});
    Path::parse("$.step.out")
        .unwrap()
        .set(&mut data, json!("x"))
        .unwrap();
    assert_eq!(data, json!({"keep": 1, "step": {"out": "x"}}));
    Path::parse("$").unwrap().set(&mut data, json!(2)).unwrap();
    assert_eq!(data, json!(2));
}

#[test]
fn templates_fill_path_entries_and_keep_literals() {
    let t = Template::parse(&json!({"id.$": "$.a", "fixed": {"n": 1}, "list": ["x"]})).unwrap();
    assert_eq!(
        t.render(&json!({"a": "v"}), &json!({})).unwrap(),
        json!({"id": "v", "fixed": {"n": 1}, "list": ["x"]})
    );
    assert!(
        t.render(&json!({}), &json!({}))
            .unwrap_err()
            .contains("$.a")
    );
    assert!(Template::parse(&json!({"x.$": "States.Format('{}', $.a)"})).is_err());
}

#[test]
fn templates_read_the_execution_and_state_machine_from_the_context_object() {
    let t = Template::parse(&json!({
        "execution": {"id.$": "$$.Execution.Id", "startedAt.$": "$$.Execution.StartTime"},
        "machine.$": "$$.StateMachine.Id",
        "id.$": "$.Execution.Id",
    }))
    .unwrap();
    let context = json!({
        "Execution": {"Id": "exec-1", "StartTime": "2026-11-25T10:00:00.000Z"},
        "StateMachine": {"Id": "machine"},
    });
    let data = json!({"Execution": {"Id": "from the input"}});
    assert_eq!(
        t.render(&data, &context).unwrap(),
        json!({
            "execution": {"id": "exec-1", "startedAt": "2026-11-25T10:00:00.000Z"},
            "machine": "machine",
            "id": "from the input",
        })
    );
    for unsupported in [
        "$$.Task.Token",
        "$$.State.RetryCount",
        "$$.Map.Item.Value",
        "$$",
    ] {
        let refused = Template::parse(&json!({ "x.$": unsupported })).unwrap_err();
        assert!(
            refused.contains("not supported"),
            "{unsupported}: {refused}"
        );
    }
}
