//! Loading a state machine: the Amazon States Language JSON parsed into states, with every
//! feature the engine does not run refused at load time by the name of its state.

use std::collections::HashMap;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value};

use crate::definition::{
    Catcher, Comparison, Io, LoadError, Retrier, Rule, State, StateMachine, Then,
};
use crate::path::{Path, Template};
use crate::resource::handler_of;

fn at(state: &str, message: impl std::fmt::Display) -> LoadError {
    LoadError(format!("state {state:?}: {message}"))
}

// Raw shapes as written. `deny_unknown_fields` is what refuses unsupported features
// (ResultSelector, HeartbeatSeconds, Credentials, Assign, ...) by name.

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct RawMachine {
    #[serde(default, rename = "Comment")]
    _comment: Option<IgnoredAny>,
    start_at: String,
    states: Map<String, Value>,
    #[serde(default)]
    version: Option<String>,
}

/// A state as written: every field any supported state type has. Which of them a type may
/// carry is [`FIELDS`]'s business; a field no supported type has is refused by serde, by name.
#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct RawState {
    #[serde(rename = "Type")]
    kind: String,
    #[serde(default, rename = "Comment")]
    _comment: Option<IgnoredAny>,
    #[serde(default)]
    resource: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    input_path: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    output_path: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    result_path: Option<Option<String>>,
    #[serde(default)]
    parameters: Option<Value>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    timeout_seconds: Option<u64>,
    #[serde(default)]
    retry: Vec<RawRetrier>,
    #[serde(default)]
    catch: Vec<RawCatcher>,
    #[serde(default)]
    seconds: Option<u64>,
    #[serde(default)]
    seconds_path: Option<String>,
    #[serde(default)]
    choices: Option<Vec<Map<String, Value>>>,
    #[serde(default)]
    default: Option<String>,
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    cause: Option<String>,
    #[serde(default)]
    next: Option<String>,
    #[serde(default)]
    end: Option<bool>,
}

/// The fields each supported state type may carry besides `Type` and `Comment`.
const FIELDS: &[(&str, &[&str])] = &[
    (
        "Task",
        &[
            "Resource",
            "InputPath",
            "OutputPath",
            "ResultPath",
            "Parameters",
            "TimeoutSeconds",
            "Retry",
            "Catch",
            "Next",
            "End",
        ],
    ),
    (
        "Pass",
        &[
            "InputPath",
            "OutputPath",
            "ResultPath",
            "Parameters",
            "Result",
            "Next",
            "End",
        ],
    ),
    (
        "Wait",
        &[
            "InputPath",
            "OutputPath",
            "Seconds",
            "SecondsPath",
            "Next",
            "End",
        ],
    ),
    ("Choice", &["InputPath", "OutputPath", "Choices", "Default"]),
    ("Succeed", &["InputPath", "OutputPath"]),
    ("Fail", &["Error", "Cause"]),
];

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct RawRetrier {
    error_equals: Vec<String>,
    #[serde(default)]
    interval_seconds: Option<f64>,
    #[serde(default)]
    max_attempts: Option<u32>,
    #[serde(default)]
    backoff_rate: Option<f64>,
    #[serde(default)]
    max_delay_seconds: Option<f64>,
    #[serde(default)]
    jitter_strategy: Option<String>,
    #[serde(default, rename = "Comment")]
    _comment: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase", deny_unknown_fields)]
struct RawCatcher {
    error_equals: Vec<String>,
    #[serde(default, deserialize_with = "nullable")]
    result_path: Option<Option<String>>,
    next: String,
    #[serde(default, rename = "Comment")]
    _comment: Option<IgnoredAny>,
}

/// Tells a field written as JSON null (`Some(None)`) from an absent one (`None`).
fn nullable<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

fn optional_path(
    state: &str, p: Option<Option<String>>,
) -> Result<Option<Option<Path>>, LoadError> {
    p.map(|p| p.map(|p| Path::parse(&p)).transpose())
        .transpose()
        .map_err(|e| at(state, e))
}

fn then(state: &str, next: Option<String>, end: Option<bool>) -> Result<Then, LoadError> {
    match (next, end) {
        (Some(next), None | Some(false)) => Ok(Then::Next(next)),
        (None, Some(true)) => Ok(Then::End),
        (Some(_), Some(true)) => Err(at(state, "has both Next and End")),
        (None, _) => Err(at(state, "needs Next or End: true")),
    }
}

fn parse<T: serde::de::DeserializeOwned>(state: &str, raw: &Value) -> Result<T, LoadError> {
    serde_json::from_value(raw.clone()).map_err(|e| at(state, e))
}

fn comparison(state: &str, rule: &Map<String, Value>) -> Result<Option<Comparison>, LoadError> {
    let ops: Vec<(&String, &Value)> = rule
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "Variable" | "Next" | "Comment"))
        .collect();
    let [(op, value)] = ops.as_slice() else {
        return Ok(None);
    };
    let number = || {
        value
            .as_f64()
            .ok_or_else(|| at(state, format!("{op} needs a number")))
    };
    let boolean = || {
        value
            .as_bool()
            .ok_or_else(|| at(state, format!("{op} needs a boolean")))
    };
    Ok(Some(match op.as_str() {
        "StringEquals" => Comparison::StringEquals(
            value
                .as_str()
                .ok_or_else(|| at(state, "StringEquals needs a string"))?
                .to_owned(),
        ),
        "BooleanEquals" => Comparison::BooleanEquals(boolean()?),
        "NumericEquals" => Comparison::NumericEquals(number()?),
        "NumericLessThan" => Comparison::NumericLessThan(number()?),
        "NumericLessThanEquals" => Comparison::NumericLessThanEquals(number()?),
        "NumericGreaterThan" => Comparison::NumericGreaterThan(number()?),
        "NumericGreaterThanEquals" => Comparison::NumericGreaterThanEquals(number()?),
        "IsPresent" => Comparison::IsPresent(boolean()?),
        "IsNull" => Comparison::IsNull(boolean()?),
        other => {
            return Err(at(
                state,
                format!("choice operator {other} is not supported by the local engine"),
            ));
        }
    }))
}

fn rule(state: &str, raw: &Map<String, Value>) -> Result<Rule, LoadError> {
    let nested = |v: &Value| -> Result<Rule, LoadError> {
        let map = v
            .as_object()
            .ok_or_else(|| at(state, "a nested choice rule must be an object"))?;
        if map.contains_key("Next") {
            return Err(at(state, "a nested choice rule cannot have Next"));
        }
        rule(state, map)
    };
    let list = |v: &Value| -> Result<Vec<Rule>, LoadError> {
        v.as_array()
            .ok_or_else(|| at(state, "And/Or need an array of rules"))?
            .iter()
            .map(nested)
            .collect()
    };
    if let Some(v) = raw.get("And") {
        return Ok(Rule::And(list(v)?));
    }
    if let Some(v) = raw.get("Or") {
        return Ok(Rule::Or(list(v)?));
    }
    if let Some(v) = raw.get("Not") {
        return Ok(Rule::Not(Box::new(nested(v)?)));
    }
    let variable = raw
        .get("Variable")
        .and_then(Value::as_str)
        .ok_or_else(|| at(state, "a choice rule needs Variable (or And/Or/Not)"))?;
    let path = Path::parse(variable).map_err(|e| at(state, e))?;
    let comparison = comparison(state, raw)?
        .ok_or_else(|| at(state, "a choice rule needs exactly one operator"))?;
    Ok(Rule::Test(path, comparison))
}

fn retrier(state: &str, r: RawRetrier) -> Result<Retrier, LoadError> {
    let full_jitter = match r.jitter_strategy.as_deref() {
        None | Some("NONE") => false,
        Some("FULL") => true,
        Some(other) => return Err(at(state, format!("unknown JitterStrategy {other}"))),
    };
    Ok(Retrier {
        errors: r.error_equals,
        interval_secs: r.interval_seconds.unwrap_or(1.0),
        max_attempts: r.max_attempts.unwrap_or(3),
        backoff_rate: r.backoff_rate.unwrap_or(2.0),
        max_delay_secs: r.max_delay_seconds,
        full_jitter,
    })
}

/// `InputPath`, `OutputPath`, `Parameters` and `ResultPath` of a state, compiled.
fn io(name: &str, raw: &mut RawState) -> Result<Io, LoadError> {
    Ok(Io {
        input_path: optional_path(name, raw.input_path.take())?,
        output_path: optional_path(name, raw.output_path.take())?,
        parameters: raw
            .parameters
            .as_ref()
            .map(Template::parse)
            .transpose()
            .map_err(|e| at(name, e))?,
        result_path: optional_path(name, raw.result_path.take())?,
    })
}

/// One state, checked: its type is supported, it carries only its type's fields, and a Task's
/// resource names one of `handlers`.
fn state(name: &str, value: &Value, handlers: &[&str]) -> Result<State, LoadError> {
    let mut raw: RawState = parse(name, value)?;
    let Some((_, allowed)) = FIELDS.iter().find(|(kind, _)| *kind == raw.kind) else {
        return Err(at(
            name,
            format!("type {} is not supported by the local engine", raw.kind),
        ));
    };
    let fields = value.as_object().into_iter().flat_map(|o| o.keys());
    if let Some(field) = fields
        .filter(|f| !matches!(f.as_str(), "Type" | "Comment"))
        .find(|f| !allowed.contains(&f.as_str()))
    {
        return Err(at(
            name,
            format!("a {} state cannot have {field}", raw.kind),
        ));
    }
    let io = io(name, &mut raw)?;
    Ok(match raw.kind.as_str() {
        "Task" => {
            let resource = raw.resource.unwrap_or_default();
            let handler = handler_of(&resource)
                .filter(|h| handlers.contains(h))
                .ok_or_else(|| at(name, format!("no local handler for resource {resource:?}")))?;
            State::Task {
                handler: handler.to_owned(),
                io,
                timeout_secs: raw.timeout_seconds,
                retry: raw
                    .retry
                    .into_iter()
                    .map(|r| retrier(name, r))
                    .collect::<Result<_, _>>()?,
                catch: raw
                    .catch
                    .into_iter()
                    .map(|c| {
                        Ok(Catcher {
                            errors: c.error_equals,
                            result_path: optional_path(name, c.result_path)?,
                            next: c.next,
                        })
                    })
                    .collect::<Result<_, LoadError>>()?,
                then: then(name, raw.next, raw.end)?,
            }
        }
        "Pass" => State::Pass {
            io,
            result: raw.result,
            then: then(name, raw.next, raw.end)?,
        },
        "Wait" => {
            if raw.seconds.is_some() == raw.seconds_path.is_some() {
                return Err(at(
                    name,
                    "a Wait needs exactly one of Seconds and SecondsPath (Timestamp is not \
                     supported by the local engine)",
                ));
            }
            State::Wait {
                io,
                seconds: raw.seconds,
                seconds_path: raw
                    .seconds_path
                    .map(|p| Path::parse(&p))
                    .transpose()
                    .map_err(|e| at(name, e))?,
                then: then(name, raw.next, raw.end)?,
            }
        }
        "Choice" => {
            let choices = raw.choices.unwrap_or_default();
            if choices.is_empty() {
                return Err(at(name, "a Choice needs at least one rule"));
            }
            State::Choice {
                io,
                choices: choices
                    .iter()
                    .map(|r| {
                        let next = r
                            .get("Next")
                            .and_then(Value::as_str)
                            .ok_or_else(|| at(name, "a top-level choice rule needs Next"))?;
                        Ok((rule(name, r)?, next.to_owned()))
                    })
                    .collect::<Result<_, LoadError>>()?,
                default: raw.default,
            }
        }
        "Succeed" => State::Succeed { io },
        _ => State::Fail {
            error: raw.error.unwrap_or_else(|| "States.Fail".into()),
            cause: raw.cause.unwrap_or_default(),
        },
    })
}

impl StateMachine {
    /// Parses and checks a definition. `handlers` are the Task handlers available; a Task whose
    /// resource names no handler is refused, as is any feature the engine does not run, and
    /// every `Next` must name a state. The machine is not yet named ([`StateMachine::named`]).
    pub fn load(json: &str, handlers: &[&str]) -> Result<Self, LoadError> {
        let raw: RawMachine = serde_json::from_str(json).map_err(|e| LoadError(e.to_string()))?;
        let _ = raw.version;
        let mut states = HashMap::new();
        for (name, value) in &raw.states {
            states.insert(name.clone(), state(name, value, handlers)?);
        }
        let machine = Self {
            start_at: raw.start_at,
            states,
            identity: None,
        };
        machine.check_targets()?;
        Ok(machine)
    }

    fn check_targets(&self) -> Result<(), LoadError> {
        if !self.states.contains_key(&self.start_at) {
            return Err(LoadError(format!(
                "StartAt names no state: {:?}",
                self.start_at
            )));
        }
        for (name, state) in &self.states {
            let mut targets: Vec<&String> = vec![];
            match state {
                State::Task { then, catch, .. } => {
                    targets.extend(catch.iter().map(|c| &c.next));
                    if let Then::Next(n) = then {
                        targets.push(n);
                    }
                }
                State::Pass { then, .. } | State::Wait { then, .. } => {
                    if let Then::Next(n) = then {
                        targets.push(n);
                    }
                }
                State::Choice {
                    choices, default, ..
                } => {
                    targets.extend(choices.iter().map(|(_, n)| n));
                    targets.extend(default);
                }
                State::Succeed { .. } | State::Fail { .. } => {}
            }
            if let Some(missing) = targets
                .iter()
                .find(|t| !self.states.contains_key(t.as_str()))
            {
                return Err(at(
                    name,
                    format!("goes to {missing:?}, which is not a state"),
                ));
            }
        }
        Ok(())
    }
}
