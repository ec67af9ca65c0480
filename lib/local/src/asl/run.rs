//! Running a loaded state machine: one execution is one tokio future that walks the states,
//! invoking Task handlers in-process with Step Functions' Retry, Catch and timeout semantics.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::definition::{Catcher, Comparison, Io, Retrier, Rule, State, StateMachine, Then};
use super::path::Path;

/// State transitions one execution may make at most, like Step Functions' history limit; a
/// machine that loops past it fails with `States.Runtime`.
pub const MAX_TRANSITIONS: usize = 25_000;

/// A Task's failure: the error name Retry and Catch match, and its cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{error}: {cause}")]
pub struct TaskError {
    pub error: String,
    pub cause: String,
}

impl TaskError {
    pub fn new(error: impl Into<String>, cause: impl Into<String>) -> Self {
        Self {
            error: error.into(),
            cause: cause.into(),
        }
    }
}

/// The in-process handlers behind the Task states.
#[async_trait]
pub trait Tasks: Send + Sync {
    /// Runs `handler` on `input`. `signal` is the execution's signal (the run's cancellation):
    /// a handler may return early when it fires.
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError>;
}

/// Sees every state an execution enters, before the state runs; the execution waits for it.
#[async_trait]
pub trait Observer: Send + Sync {
    async fn entering(&self, state: &str, input: &Value);
}

/// Logs each transition at debug level.
pub struct TracingObserver;

#[async_trait]
impl Observer for TracingObserver {
    async fn entering(&self, state: &str, _input: &Value) {
        tracing::debug!(state, "entering state");
    }
}

/// How an execution runs.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// Multiplies every Retry and Wait delay. 1.0 is the definition's own timing.
    pub delay_scale: f64,
}

impl Default for Options {
    fn default() -> Self {
        Self { delay_scale: 1.0 }
    }
}

fn runtime(cause: impl Into<String>) -> TaskError {
    TaskError::new("States.Runtime", cause)
}

/// Whether an `ErrorEquals` list matches `error`, with Step Functions' wildcards.
fn matches(errors: &[String], error: &str) -> bool {
    errors.iter().any(|e| {
        e == "States.ALL"
            || e == error
            || (e == "States.TaskFailed" && error != "States.Timeout" && error != "States.Runtime")
    })
}

impl Retrier {
    /// The delay before retry number `attempt` (1-based), before jitter: the interval grown by
    /// the backoff rate, capped by `MaxDelaySeconds`. Full jitter then takes `sample` (in
    /// [0, 1)) of it.
    pub(super) fn delay(&self, attempt: u32, sample: f64) -> Duration {
        let mut secs = self.interval_secs * self.backoff_rate.powi(attempt as i32 - 1);
        if let Some(max) = self.max_delay_secs {
            secs = secs.min(max);
        }
        if self.full_jitter {
            secs *= sample;
        }
        Duration::from_secs_f64(secs.max(0.0))
    }
}

/// A uniform sample in [0, 1) for jitter.
fn sample() -> f64 {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes).expect("the OS provides randomness");
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

fn select(path: &Option<Option<Path>>, data: Value) -> Result<Value, TaskError> {
    match path {
        None => Ok(data),
        Some(None) => Ok(json!({})),
        Some(Some(p)) => p
            .get(&data)
            .cloned()
            .ok_or_else(|| runtime(format!("the path {:?} selects nothing", p.as_str()))),
    }
}

fn place(path: &Option<Option<Path>>, mut input: Value, result: Value) -> Result<Value, TaskError> {
    match path {
        None => Ok(result),
        Some(None) => Ok(input),
        Some(Some(p)) => {
            p.set(&mut input, result).map_err(runtime)?;
            Ok(input)
        }
    }
}

impl Io {
    /// `InputPath`, then `Parameters` (which may read the `context` object): what the state
    /// works on.
    fn effective(&self, input: &Value, context: &Value) -> Result<Value, TaskError> {
        let selected = select(&self.input_path, input.clone())?;
        match &self.parameters {
            Some(t) => t.render(&selected, context).map_err(runtime),
            None => Ok(selected),
        }
    }

    /// `ResultPath`, then `OutputPath`: what the state hands on.
    fn output(&self, input: Value, result: Value) -> Result<Value, TaskError> {
        select(&self.output_path, place(&self.result_path, input, result)?)
    }
}

impl Rule {
    fn holds(&self, data: &Value) -> Result<bool, TaskError> {
        Ok(match self {
            Rule::And(rules) => {
                for r in rules {
                    if !r.holds(data)? {
                        return Ok(false);
                    }
                }
                true
            }
            Rule::Or(rules) => {
                for r in rules {
                    if r.holds(data)? {
                        return Ok(true);
                    }
                }
                false
            }
            Rule::Not(rule) => !rule.holds(data)?,
            Rule::Test(path, comparison) => {
                let value = path.get(data);
                match comparison {
                    Comparison::IsPresent(want) => value.is_some() == *want,
                    _ => {
                        let value = value.ok_or_else(|| {
                            runtime(format!(
                                "the choice variable {:?} is missing",
                                path.as_str()
                            ))
                        })?;
                        match comparison {
                            Comparison::IsNull(want) => value.is_null() == *want,
                            Comparison::StringEquals(s) => value.as_str() == Some(s.as_str()),
                            Comparison::BooleanEquals(b) => value.as_bool() == Some(*b),
                            Comparison::NumericEquals(n) => value.as_f64() == Some(*n),
                            Comparison::NumericLessThan(n) => {
                                value.as_f64().is_some_and(|v| v < *n)
                            }
                            Comparison::NumericLessThanEquals(n) => {
                                value.as_f64().is_some_and(|v| v <= *n)
                            }
                            Comparison::NumericGreaterThan(n) => {
                                value.as_f64().is_some_and(|v| v > *n)
                            }
                            Comparison::NumericGreaterThanEquals(n) => {
                                value.as_f64().is_some_and(|v| v >= *n)
                            }
                            Comparison::IsPresent(_) => unreachable!("handled above"),
                        }
                    }
                }
            }
        })
    }
}

/// Where a state sends the execution.
enum Step {
    Goto(String, Value),
    Succeeded(Value),
    Failed(TaskError),
}

fn follow(then: &Then, output: Value) -> Step {
    match then {
        Then::Next(n) => Step::Goto(n.clone(), output),
        Then::End => Step::Succeeded(output),
    }
}

/// An execution as the context object shows it to `Parameters` (`$$.Execution.Id`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    pub id: String,
    pub name: String,
    /// RFC 3339, as Step Functions writes `$$.Execution.StartTime`.
    pub start_time: String,
}

/// The state machine's id as the context object shows it (`$$.StateMachine.Id`): what a Task
/// starting an execution of this same machine names as its `StateMachineArn`.
pub const LOCAL_MACHINE_ID: &str = "local:stateMachine:agent";

/// What the ids of [`Execution::new`] start with.
pub const EXECUTION_ID_PREFIX: &str = "local:execution:agent";

impl Execution {
    /// An execution named `name` that started at `start`, with an id of its own (a name may be
    /// started twice, as Express allows).
    pub fn new(name: &str, start: knowledge_core::clock::Timestamp) -> Self {
        Self::under(EXECUTION_ID_PREFIX, name, start)
    }

    /// The same, its id `<prefix>:<name>:<random>`: an engine names its executions apart from
    /// another engine's.
    pub fn under(prefix: &str, name: &str, start: knowledge_core::clock::Timestamp) -> Self {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).expect("the system's random source works");
        Self {
            id: format!("{prefix}:{name}:{}", hex::encode(random)),
            name: name.to_owned(),
            start_time: start.to_iso8601(),
        }
    }

    fn context(&self, input: &Value) -> Value {
        json!({
            "Execution": {
                "Id": self.id, "Name": self.name, "StartTime": self.start_time, "Input": input,
            },
            "StateMachine": { "Id": LOCAL_MACHINE_ID, "Name": "agent" },
        })
    }
}

impl StateMachine {
    /// Runs one execution to its end. Returns the output of the `Succeed` (or `End`) state it
    /// reached, or the error of the `Fail` state, the uncaught Task failure, or the runtime error
    /// (a path that selects nothing, no matching choice) that ended it.
    pub async fn run(
        &self, execution: &Execution, input: Value, tasks: Arc<dyn Tasks>,
        signal: CancellationToken, observer: &dyn Observer, options: Options,
    ) -> Result<Value, TaskError> {
        let context = execution.context(&input);
        let mut name = self.start_at.clone();
        let mut data = input;
        for _ in 0..MAX_TRANSITIONS {
            observer.entering(&name, &data).await;
            let state = &self.states[&name];
            match self
                .enter(state, data, &context, &tasks, &signal, options)
                .await?
            {
                Step::Goto(next, output) => {
                    name = next;
                    data = output;
                }
                Step::Succeeded(output) => return Ok(output),
                Step::Failed(e) => return Err(e),
            }
        }
        Err(runtime(format!(
            "the execution made more than {MAX_TRANSITIONS} transitions"
        )))
    }

    async fn enter(
        &self, state: &State, input: Value, context: &Value, tasks: &Arc<dyn Tasks>,
        signal: &CancellationToken, options: Options,
    ) -> Result<Step, TaskError> {
        Ok(match state {
            State::Pass { io, result, then } => {
                let effective = io.effective(&input, context)?;
                let result = result.clone().unwrap_or(effective);
                follow(then, io.output(input, result)?)
            }
            State::Wait {
                io,
                seconds,
                seconds_path,
                then,
            } => {
                let selected = select(&io.input_path, input)?;
                let secs = match (seconds, seconds_path) {
                    (Some(s), _) => *s as f64,
                    (None, Some(p)) => {
                        p.get(&selected).and_then(Value::as_f64).ok_or_else(|| {
                            runtime(format!("SecondsPath {:?} is not a number", p.as_str()))
                        })?
                    }
                    (None, None) => 0.0,
                };
                let wait = Duration::from_secs_f64(secs.max(0.0) * options.delay_scale);
                wait_unless_signalled(wait, signal).await;
                follow(then, select(&io.output_path, selected)?)
            }
            State::Choice {
                io,
                choices,
                default,
            } => {
                let selected = select(&io.input_path, input)?;
                let mut next = None;
                for (rule, target) in choices {
                    if rule.holds(&selected)? {
                        next = Some(target.clone());
                        break;
                    }
                }
                let next = next.or_else(|| default.clone()).ok_or_else(|| {
                    TaskError::new("States.NoChoiceMatched", "no choice rule matched")
                })?;
                Step::Goto(next, select(&io.output_path, selected)?)
            }
            State::Succeed { io } => {
                let selected = select(&io.input_path, input)?;
                Step::Succeeded(select(&io.output_path, selected)?)
            }
            State::Fail { error, cause } => Step::Failed(TaskError::new(error, cause)),
            State::Task {
                handler,
                io,
                timeout_secs,
                retry,
                catch,
                then,
            } => {
                let effective = io.effective(&input, context)?;
                match invoke_with_retry(
                    handler,
                    &effective,
                    *timeout_secs,
                    retry,
                    tasks,
                    signal,
                    options,
                )
                .await
                {
                    Ok(result) => follow(then, io.output(input, result)?),
                    Err(e) => match catch.iter().find(|c| matches(&c.errors, &e.error)) {
                        Some(Catcher {
                            result_path, next, ..
                        }) => {
                            let error = json!({ "Error": e.error, "Cause": e.cause });
                            Step::Goto(next.clone(), place(result_path, input, error)?)
                        }
                        None => Step::Failed(e),
                    },
                }
            }
        })
    }
}

/// Invokes a Task until it succeeds or no retrier matches its error any more. Each retrier
/// counts its own attempts, as in Step Functions.
async fn invoke_with_retry(
    handler: &str, input: &Value, timeout_secs: Option<u64>, retry: &[Retrier],
    tasks: &Arc<dyn Tasks>, signal: &CancellationToken, options: Options,
) -> Result<Value, TaskError> {
    let mut attempts = vec![0u32; retry.len()];
    loop {
        // An attempt that began before the run was signalled may have failed for reasons the
        // signal makes moot: its backoff ends when the signal fires. One that began after (the
        // run's termination, say) keeps its backoff, or a passing store failure would use up
        // its retries at once.
        let began_signalled = signal.is_cancelled();
        let error = match invoke_once(handler, input.clone(), timeout_secs, tasks, signal).await {
            Ok(v) => return Ok(v),
            Err(e) => e,
        };
        let Some(i) = retry.iter().position(|r| matches(&r.errors, &error.error)) else {
            return Err(error);
        };
        attempts[i] += 1;
        if attempts[i] > retry[i].max_attempts {
            return Err(error);
        }
        tracing::warn!(handler, error = %error, attempt = attempts[i], "task failed; retrying");
        let delay = retry[i]
            .delay(attempts[i], sample())
            .mul_f64(options.delay_scale);
        if began_signalled {
            tokio::time::sleep(delay).await;
        } else {
            wait_unless_signalled(delay, signal).await;
        }
    }
}

/// Sleeps for `wait`, or less: the wait ends at once when the execution's signal fires (the
/// run was cancelled, deleted or superseded), so that the next Task attempt, which reads the
/// session first, routes the run to its end without waiting out a backoff meant for a
/// healthy run. Step Functions cannot cut its own waits short: see docs/workflow.md.
async fn wait_unless_signalled(wait: Duration, signal: &CancellationToken) {
    tokio::select! {
        () = tokio::time::sleep(wait) => {}
        () = signal.cancelled() => {}
    }
}

/// One attempt, on its own tokio task so that a panicking handler is a failed Task
/// (`States.TaskFailed`) rather than a dead execution, and bounded by `TimeoutSeconds`
/// (`States.Timeout`, the attempt is aborted).
async fn invoke_once(
    handler: &str, input: Value, timeout_secs: Option<u64>, tasks: &Arc<dyn Tasks>,
    signal: &CancellationToken,
) -> Result<Value, TaskError> {
    let (tasks, signal, name) = (tasks.clone(), signal.clone(), handler.to_owned());
    let mut attempt = tokio::spawn(async move { tasks.invoke(&name, input, signal).await });
    let joined = match timeout_secs {
        Some(secs) => match tokio::time::timeout(Duration::from_secs(secs), &mut attempt).await {
            Ok(joined) => joined,
            Err(_) => {
                attempt.abort();
                return Err(TaskError::new(
                    "States.Timeout",
                    format!("{handler} ran longer than {secs} s"),
                ));
            }
        },
        None => attempt.await,
    };
    joined.unwrap_or_else(|e| {
        Err(TaskError::new(
            "States.TaskFailed",
            format!("{handler} did not complete: {e}"),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::super::definition::START_EXECUTION;
    use super::*;
    use std::sync::Mutex;

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
                &Execution::new("test", knowledge_core::clock::Timestamp(0)),
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
        .unwrap();
        let execution = Execution::new("first", knowledge_core::clock::Timestamp(0));
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
                json!({"StateMachineArn": LOCAL_MACHINE_ID, "Name": "second",
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
        let execution = Execution::new("timed", knowledge_core::clock::Timestamp(0));
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

    #[test]
    fn retry_delays_grow_by_the_backoff_rate_up_to_the_cap_and_full_jitter_scales_them() {
        let r = Retrier {
            errors: vec![],
            interval_secs: 1.0,
            max_attempts: 5,
            backoff_rate: 2.0,
            max_delay_secs: Some(5.0),
            full_jitter: false,
        };
        let secs: Vec<f64> = (1..=4).map(|a| r.delay(a, 0.5).as_secs_f64()).collect();
        assert_eq!(secs, [1.0, 2.0, 4.0, 5.0]);
        let jittered = Retrier {
            full_jitter: true,
            ..r
        };
        assert_eq!(jittered.delay(3, 0.5).as_secs_f64(), 2.0);
    }
}
