//! Running a loaded state machine: one execution is one tokio future that walks the states,
//! invoking Task handlers in-process with Step Functions' Retry, Catch and timeout semantics,
//! seen by an [`Observer`] and timed by its [`Options`].

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::data::{place, select};
use crate::definition::{Catcher, State, StateMachine, Then};
use crate::task::{TaskError, Tasks, invoke_with_retry, matches, runtime, wait_unless_signalled};

/// State transitions one execution may make at most, like Step Functions' history limit; a
/// machine that loops past it fails with `States.Runtime`.
pub const MAX_TRANSITIONS: usize = 25_000;

/// Sees every state an execution enters, before the state runs; the execution waits for it.
#[async_trait]
pub trait Observer: Send + Sync {
    /// Called with the state's name and its input before the state runs.
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

/// Where a state sends the execution.
enum Step {
    Goto(String, Value),
    Succeeded(Value),
    Failed(TaskError),
}

/// The step to the state after one that completed with `output`.
fn follow(then: &Then, output: Value) -> Step {
    match then {
        Then::Next(n) => Step::Goto(n.clone(), output),
        Then::End => Step::Succeeded(output),
    }
}

/// An execution as the context object shows it to `Parameters` (`$$.Execution.Id`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// `$$.Execution.Id`: unique to this execution.
    pub id: String,
    /// `$$.Execution.Name`: the name it was started under.
    pub name: String,
    /// RFC 3339, as Step Functions writes `$$.Execution.StartTime`.
    pub start_time: String,
}

impl Execution {
    /// An execution named `name` that started at `start_time` (RFC 3339, shown as given), its id
    /// `<prefix>:<name>:<random>`: its own even when a name is started twice, as Express
    /// allows, and apart from the executions of an engine with another prefix.
    pub fn under(prefix: &str, name: &str, start_time: impl Into<String>) -> Self {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).expect("the system's random source works");
        Self {
            id: format!("{prefix}:{name}:{}", hex::encode(random)),
            name: name.to_owned(),
            start_time: start_time.into(),
        }
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
        let context = self.context(execution, &input);
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

    /// The context object of `execution` on `input`: the execution's fields, and the machine's
    /// once it is named.
    fn context(&self, execution: &Execution, input: &Value) -> Value {
        let mut context = json!({
            "Execution": {
                "Id": execution.id, "Name": execution.name, "StartTime": execution.start_time,
                "Input": input,
            },
        });
        if let Some((id, name)) = &self.identity {
            context["StateMachine"] = json!({ "Id": id, "Name": name });
        }
        context
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
                    options.delay_scale,
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
