//! Running executions: what Tasks see and hand on, Pass, Wait and Choice routing, Retry and
//! Catch, timeouts, panics, runtime errors, the execution's signal cutting waits short, the
//! context object and the transition limit. The Tasks are a script of dummy handlers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use knowledge_asl::{
    Execution, MAX_TRANSITIONS, Observer, Options, START_EXECUTION, StateMachine, TaskError, Tasks,
    TracingObserver,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The id the test machines are named with where they start executions of themselves.
const MACHINE_ID: &str = "test:stateMachine:machine";

/// An execution named `name`, started at the epoch.
fn execution(name: &str) -> Execution {
    Execution::under("test:execution:machine", name, "1970-01-01T00:00:00.000Z")
}

/// Handlers for inline definitions: `Echo` returns its input, `Flaky` fails with the errors
/// queued in it first, `SignalFlaky` likewise but fires the run's signal as it fails,
/// `Slow` never answers, `Panic` panics. Every call is recorded.
#[derive(Default)]
struct Script {
    failures: Mutex<Vec<&'static str>>,
    calls: Mutex<Vec<(String, Value)>>,
}

#[async_trait]
impl Tasks for Script {
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError> {
        self.calls
            .lock()
            .unwrap()
            .push((handler.to_owned(), input.clone()));
        match handler {
            "Flaky" | "SignalFlaky" => match self.failures.lock().unwrap().pop() {
                Some(error) => {
                    if handler == "SignalFlaky" {
                        signal.cancel();
                    }
                    Err(TaskError::new(error, "scripted"))
                }
                None => Ok(json!({"ok": true})),
            },
            "Slow" => std::future::pending().await,
            "Panic" => panic!("handler bug"),
            _ => Ok(input),
        }
    }
}

const HANDLERS: [&str; 5] = ["Echo", "Flaky", "SignalFlaky", "Slow", "Panic"];

async fn run(definition: Value, script: Arc<Script>, input: Value) -> Result<Value, TaskError> {
    let machine = StateMachine::load(&definition.to_string(), &HANDLERS).unwrap();
    machine
        .run(
            &execution("test"),
            input,
            script,
            CancellationToken::new(),
            &TracingObserver,
            Options { delay_scale: 0.001 },
        )
        .await
}

#[tokio::test]
async fn paths_and_parameters_shape_what_a_task_sees_and_hands_on() {
    let script = Arc::new(Script::default());
    let out = run(
        json!({"StartAt": "T", "States": {"T": {
            "Type": "Task", "Resource": "${EchoFunctionArn}", "InputPath": "$.in",
            "Parameters": {"x.$": "$.a", "fixed": 1}, "ResultPath": "$.in.result",
            "OutputPath": "$.in", "End": true}}}),
        script.clone(),
        json!({"in": {"a": "A"}, "dropped": true}),
    )
    .await
    .unwrap();
    assert_eq!(
        script.calls.lock().unwrap()[0].1,
        json!({"x": "A", "fixed": 1})
    );
    assert_eq!(out, json!({"a": "A", "result": {"x": "A", "fixed": 1}}));
}

#[tokio::test]
async fn a_start_execution_task_hands_its_rendered_parameters_to_the_start_handler() {
    let script = Arc::new(Script::default());
    let machine = StateMachine::load(
        &json!({"StartAt": "H", "States": {"H": {
            "Type": "Task", "Resource": "arn:aws:states:::states:startExecution",
            "Parameters": {"StateMachineArn.$": "$$.StateMachine.Id", "Name.$": "$.next",
                           "Input": {"from.$": "$$.Execution.Name"}},
            "ResultPath": null, "End": true}}})
        .to_string(),
        &[START_EXECUTION],
    )
    .unwrap()
    .named(MACHINE_ID, "machine");
    let execution = execution("first");
    let out = machine
        .run(
            &execution,
            json!({"next": "second"}),
            script.clone(),
            CancellationToken::new(),
            &TracingObserver,
            Options::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        script.calls.lock().unwrap()[..],
        [(
            START_EXECUTION.to_owned(),
            json!({"StateMachineArn": MACHINE_ID, "Name": "second",
                   "Input": {"from": "first"}})
        )]
    );
    assert_eq!(
        out,
        json!({"next": "second"}),
        "ResultPath null keeps the input"
    );
    assert!(
        StateMachine::load(
            &json!({"StartAt": "H", "States": {"H": {"Type": "Task",
                "Resource": "arn:aws:states:::states:startExecution.sync", "End": true}}})
            .to_string(),
            &[START_EXECUTION],
        )
        .is_err(),
        "only the request-response integration is run"
    );
}

#[tokio::test]
async fn pass_wait_and_choice_route_on_the_data() {
    let definition = json!({"StartAt": "P", "States": {
        "P": {"Type": "Pass", "Result": {"n": 3}, "ResultPath": "$.r", "Next": "W"},
        "W": {"Type": "Wait", "SecondsPath": "$.r.n", "Next": "C"},
        "C": {"Type": "Choice", "Choices": [
            {"And": [{"Variable": "$.r.n", "NumericGreaterThan": 2},
                     {"Not": {"Variable": "$.flag", "IsPresent": true}}], "Next": "Big"}],
            "Default": "Small"},
        "Big": {"Type": "Pass", "Result": "big", "End": true},
        "Small": {"Type": "Succeed", "OutputPath": null}}});
    let out = run(definition.clone(), Arc::default(), json!({}))
        .await
        .unwrap();
    assert_eq!(out, json!("big"));
    let out = run(definition, Arc::default(), json!({"flag": 1}))
        .await
        .unwrap();
    assert_eq!(out, json!({}));
}

#[tokio::test]
async fn each_retrier_counts_its_own_attempts_then_the_error_is_caught() {
    let script = Arc::new(Script::default());
    // Popped from the end: two A's (retried), one B (retried), then a third A: too many.
    *script.failures.lock().unwrap() = vec!["A", "B", "A", "A"];
    let out = run(
        json!({"StartAt": "T", "States": {
            "T": {"Type": "Task", "Resource": "${FlakyFunctionArn}",
                  "Retry": [{"ErrorEquals": ["A"], "MaxAttempts": 2, "IntervalSeconds": 1},
                            {"ErrorEquals": ["States.ALL"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                  "Catch": [{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.failure", "Next": "Caught"}],
                  "End": true},
            "Caught": {"Type": "Succeed"}}}),
        script.clone(),
        json!({"keep": 1}),
    )
    .await
    .unwrap();
    assert_eq!(script.calls.lock().unwrap().len(), 4);
    assert_eq!(
        out,
        json!({"keep": 1, "failure": {"Error": "A", "Cause": "scripted"}})
    );
}

#[tokio::test]
async fn a_task_past_its_timeout_fails_with_states_timeout_which_task_failed_does_not_match() {
    let definition = json!({"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "${SlowFunctionArn}", "TimeoutSeconds": 0,
              "Catch": [{"ErrorEquals": ["States.TaskFailed"], "Next": "Wrong"}], "End": true},
        "Wrong": {"Type": "Succeed"}}});
    let e = run(definition, Arc::default(), json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.error, "States.Timeout");
}

#[tokio::test]
async fn a_panicking_handler_is_a_failed_task_not_a_dead_execution() {
    let definition = json!({"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "${PanicFunctionArn}",
              "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "F"}], "End": true},
        "F": {"Type": "Fail", "Error": "Handled", "Cause": "caught"}}});
    let e = run(definition, Arc::default(), json!({}))
        .await
        .unwrap_err();
    assert_eq!((e.error.as_str(), e.cause.as_str()), ("Handled", "caught"));
}

#[tokio::test]
async fn a_path_that_selects_nothing_or_no_matching_choice_ends_the_execution() {
    let missing = json!({"StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": "${EchoFunctionArn}", "Parameters": {"x.$": "$.nope"},
              "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Ok"}], "End": true},
        "Ok": {"Type": "Succeed"}}});
    let e = run(missing, Arc::default(), json!({})).await.unwrap_err();
    assert_eq!(e.error, "States.Runtime");
    let unmatched = json!({"StartAt": "C", "States": {
        "C": {"Type": "Choice", "Choices": [{"Variable": "$.x", "StringEquals": "y", "Next": "C"}]}}});
    let e = run(unmatched, Arc::default(), json!({"x": "z"}))
        .await
        .unwrap_err();
    assert_eq!(e.error, "States.NoChoiceMatched");
}

/// Runs `definition` with the definition's own timing on `signal`, within `bound`.
async fn run_timed(
    definition: Value, script: Arc<Script>, signal: CancellationToken, bound: Duration,
) -> Result<Value, TaskError> {
    let machine = StateMachine::load(&definition.to_string(), &HANDLERS).unwrap();
    let execution = execution("timed");
    let run = machine.run(
        &execution,
        json!({}),
        script,
        signal,
        &TracingObserver,
        Options::default(),
    );
    tokio::time::timeout(bound, run)
        .await
        .expect("the execution ends within its bound")
}

#[tokio::test]
async fn a_signal_during_an_attempt_ends_its_retry_backoff_at_once() {
    // The attempt fails as the run is cancelled; its minute of backoff is cut short.
    let script = Arc::new(Script::default());
    *script.failures.lock().unwrap() = vec!["A"];
    let out = run_timed(
        json!({"StartAt": "T", "States": {
            "T": {"Type": "Task", "Resource": "${SignalFlakyFunctionArn}",
                  "Retry": [{"ErrorEquals": ["A"], "MaxAttempts": 3, "IntervalSeconds": 60}],
                  "End": true}}}),
        script.clone(),
        CancellationToken::new(),
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(out, json!({"ok": true}));
    assert_eq!(script.calls.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn an_attempt_begun_after_the_signal_keeps_its_backoff() {
    // The run's own termination failing on a passing store error must not use up its
    // retries at once.
    let script = Arc::new(Script::default());
    *script.failures.lock().unwrap() = vec!["A"];
    let signal = CancellationToken::new();
    signal.cancel();
    let started = std::time::Instant::now();
    run_timed(
        json!({"StartAt": "T", "States": {
            "T": {"Type": "Task", "Resource": "${FlakyFunctionArn}",
                  "Retry": [{"ErrorEquals": ["A"], "MaxAttempts": 3, "IntervalSeconds": 1}],
                  "End": true}}}),
        script.clone(),
        signal,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950));
    assert_eq!(script.calls.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_signal_ends_a_wait_state_at_once() {
    let signal = CancellationToken::new();
    signal.cancel();
    let out = run_timed(
        json!({"StartAt": "W", "States": {
            "W": {"Type": "Wait", "Seconds": 60, "Next": "P"},
            "P": {"Type": "Pass", "Result": "after", "End": true}}}),
        Arc::default(),
        signal,
        Duration::from_secs(5),
    )
    .await
    .unwrap();
    assert_eq!(out, json!("after"));
}

#[tokio::test]
async fn choice_rules_compare_by_type_and_a_missing_variable_ends_the_execution() {
    let definition = json!({"StartAt": "C", "States": {
        "C": {"Type": "Choice", "Choices": [
            {"Variable": "$.s", "StringEquals": "a", "Next": "S"},
            {"Variable": "$.b", "BooleanEquals": true, "Next": "B"},
            {"Or": [{"Variable": "$.n", "NumericLessThanEquals": 1},
                    {"Variable": "$.n", "NumericEquals": 10}], "Next": "N"},
            {"Variable": "$.z", "IsNull": true, "Next": "Z"}],
            "Default": "D"},
        "S": {"Type": "Pass", "Result": "S", "End": true},
        "B": {"Type": "Pass", "Result": "B", "End": true},
        "N": {"Type": "Pass", "Result": "N", "End": true},
        "Z": {"Type": "Pass", "Result": "Z", "End": true},
        "D": {"Type": "Pass", "Result": "D", "End": true}}});
    let cases = [
        (json!({"s": "a"}), "S"),
        (json!({"s": "x", "b": true}), "B"),
        (json!({"s": "x", "b": false, "n": 10}), "N"),
        (json!({"s": "x", "b": false, "n": 0.5}), "N"),
        (json!({"s": "x", "b": false, "n": 5, "z": null}), "Z"),
        // A string is no boolean, and "1" no number.
        (json!({"s": "x", "b": "true", "n": "1", "z": 0}), "D"),
    ];
    for (input, want) in cases {
        let out = run(definition.clone(), Arc::default(), input.clone())
            .await
            .unwrap();
        assert_eq!(out, json!(want), "{input}");
    }
    let e = run(definition, Arc::default(), json!({"s": "x"}))
        .await
        .unwrap_err();
    assert_eq!(e.error, "States.Runtime");
    assert!(e.cause.contains("$.b"), "{e}");
}

#[tokio::test]
async fn the_context_object_shows_the_execution_and_the_machine_once_it_is_named() {
    let definition = json!({"StartAt": "P", "States": {"P": {"Type": "Pass", "Parameters": {
        "id.$": "$$.Execution.Id", "name.$": "$$.Execution.Name",
        "start.$": "$$.Execution.StartTime", "input.$": "$$.Execution.Input",
        "machine.$": "$$.StateMachine.Id", "machineName.$": "$$.StateMachine.Name"},
        "End": true}}});
    let machine = StateMachine::load(&definition.to_string(), &[]).unwrap();
    let execution = execution("ctx");
    let run = |machine: StateMachine| {
        let execution = execution.clone();
        async move {
            machine
                .run(
                    &execution,
                    json!({"in": 1}),
                    Arc::new(Script::default()),
                    CancellationToken::new(),
                    &TracingObserver,
                    Options::default(),
                )
                .await
        }
    };
    let unnamed = run(machine.clone()).await.unwrap_err();
    assert_eq!(unnamed.error, "States.Runtime");
    assert!(unnamed.cause.contains("StateMachine"), "{unnamed}");
    let out = run(machine.named(MACHINE_ID, "machine")).await.unwrap();
    assert_eq!(
        out,
        json!({"id": execution.id, "name": "ctx", "start": "1970-01-01T00:00:00.000Z",
               "input": {"in": 1}, "machine": MACHINE_ID, "machineName": "machine"})
    );
}

#[test]
fn execution_ids_are_their_prefix_and_name_and_apart_for_the_same_name() {
    let first = Execution::under("p:execution", "n", "2026-01-01T00:00:00.000Z");
    let second = Execution::under("p:execution", "n", "2026-01-01T00:00:00.000Z");
    for e in [&first, &second] {
        let random = e.id.strip_prefix("p:execution:n:").unwrap();
        assert_eq!(random.len(), 16, "{}", e.id);
        assert!(random.chars().all(|c| c.is_ascii_hexdigit()), "{}", e.id);
        assert_eq!(
            (e.name.as_str(), e.start_time.as_str()),
            ("n", "2026-01-01T00:00:00.000Z")
        );
    }
    assert_ne!(first.id, second.id);
}

/// Counts the states an execution enters.
#[derive(Default)]
struct Count(Mutex<usize>);

#[async_trait]
impl Observer for Count {
    async fn entering(&self, _state: &str, _input: &Value) {
        *self.0.lock().unwrap() += 1;
    }
}

#[tokio::test]
async fn an_execution_that_loops_past_the_transition_limit_fails_with_states_runtime() {
    let machine = StateMachine::load(
        &json!({"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "A"}}}).to_string(),
        &[],
    )
    .unwrap();
    let count = Count::default();
    let e = machine
        .run(
            &execution("loop"),
            json!({}),
            Arc::new(Script::default()),
            CancellationToken::new(),
            &count,
            Options::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.error, "States.Runtime");
    assert_eq!(*count.0.lock().unwrap(), MAX_TRANSITIONS);
}
