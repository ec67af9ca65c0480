//! Loading definitions: Task resources name their handlers, and a feature the engine does not
//! run, a Task without a handler or a `Next` that names no state is refused by state name.

use knowledge_asl::{LoadError, StateMachine, handler_of};

fn load(states: &str) -> Result<StateMachine, LoadError> {
    StateMachine::load(
        &format!(r#"{{"StartAt": "A", "States": {states}}}"#),
        &["Step"],
    )
}

#[test]
fn resources_name_their_handler_as_sam_substitutions_do() {
    assert_eq!(handler_of("${LoadTurnFunctionArn}"), Some("LoadTurn"));
    assert_eq!(handler_of("arn:aws:lambda:eu-west-1:1:function:x"), None);
    assert_eq!(handler_of("${FunctionArn}"), None);
}

#[test]
fn a_task_without_a_handler_is_refused_by_state_name() {
    let e = load(r#"{"A": {"Type": "Task", "Resource": "${OtherFunctionArn}", "End": true}}"#)
        .unwrap_err();
    assert!(
        e.0.contains("\"A\"") && e.0.contains("no local handler"),
        "{e}"
    );
}

#[test]
fn unsupported_features_are_refused_by_state_name() {
    let cases = [
        (r#"{"A": {"Type": "Map", "End": true}}"#, "type Map"),
        (
            r#"{"A": {"Type": "Pass", "Retry": [], "End": true}}"#,
            "cannot have Retry",
        ),
        (
            r#"{"A": {"Type": "Task", "Resource": "${StepFunctionArn}", "ResultSelector": {}, "End": true}}"#,
            "ResultSelector",
        ),
        (
            r#"{"A": {"Type": "Choice", "Choices": [{"Variable": "$.x", "StringMatches": "a*", "Next": "A"}]}}"#,
            "StringMatches",
        ),
        (
            r#"{"A": {"Type": "Pass", "Parameters": {"x.$": "$$.Task.Token"}, "End": true}}"#,
            "context object",
        ),
        (
            r#"{"A": {"Type": "Wait", "Timestamp": "2026-01-01T00:00:00Z", "End": true}}"#,
            "Timestamp",
        ),
    ];
    for (states, feature) in cases {
        let e = load(states).unwrap_err();
        assert!(
            e.0.contains("\"A\"") && e.0.contains(feature),
            "{feature}: {e}"
        );
    }
}

#[test]
fn a_next_that_names_no_state_is_refused() {
    let e = load(r#"{"A": {"Type": "Pass", "Next": "B"}}"#).unwrap_err();
    assert!(e.0.contains("\"B\""), "{e}");
}
