//! A loaded state machine: its states as the engine runs them, compiled from the definition by
//! `load.rs`, and the identity its executions' context object shows.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::path::{Path, Template};

/// Why a definition was refused; the message names the state and the feature.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state machine: {0}")]
pub struct LoadError(pub String);

/// A loaded state machine.
#[derive(Debug, Clone)]
pub struct StateMachine {
    pub(crate) start_at: String,
    pub(crate) states: HashMap<String, State>,
    /// The id and name the context object shows as `$$.StateMachine.{Id,Name}`, once named.
    pub(crate) identity: Option<(String, String)>,
}

impl StateMachine {
    /// The same machine with the id and name its executions' context object shows as
    /// `$$.StateMachine.Id` and `$$.StateMachine.Name`. A machine never named has no
    /// `StateMachine` in its context object: a template reading one of those fields fails the
    /// execution with `States.Runtime`.
    pub fn named(mut self, id: impl Into<String>, name: impl Into<String>) -> Self {
        self.identity = Some((id.into(), name.into()));
        self
    }

    /// The handlers the machine's Tasks use.
    pub fn handlers(&self) -> HashSet<&str> {
        self.states
            .values()
            .filter_map(|s| match s {
                State::Task { handler, .. } => Some(handler.as_str()),
                _ => None,
            })
            .collect()
    }
}

/// Input and output processing shared by most states.
#[derive(Debug, Clone, Default)]
pub(crate) struct Io {
    /// `None`: the whole input. `Some(None)`: JSON null, meaning `{}`.
    pub input_path: Option<Option<Path>>,
    pub output_path: Option<Option<Path>>,
    pub parameters: Option<Template>,
    /// `Some(None)`: JSON null, meaning the result is discarded.
    pub result_path: Option<Option<Path>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Retrier {
    pub errors: Vec<String>,
    pub interval_secs: f64,
    pub max_attempts: u32,
    pub backoff_rate: f64,
    pub max_delay_secs: Option<f64>,
    pub full_jitter: bool,
}

#[derive(Debug, Clone)]
pub(crate) struct Catcher {
    pub errors: Vec<String>,
    pub result_path: Option<Option<Path>>,
    pub next: String,
}

#[derive(Debug, Clone)]
pub(crate) enum Comparison {
    StringEquals(String),
    BooleanEquals(bool),
    NumericEquals(f64),
    NumericLessThan(f64),
    NumericLessThanEquals(f64),
    NumericGreaterThan(f64),
    NumericGreaterThanEquals(f64),
    IsPresent(bool),
    IsNull(bool),
}

#[derive(Debug, Clone)]
pub(crate) enum Rule {
    Test(Path, Comparison),
    And(Vec<Rule>),
    Or(Vec<Rule>),
    Not(Box<Rule>),
}

/// Where a state goes when it completes: the named state, or the end of the execution.
#[derive(Debug, Clone)]
pub(crate) enum Then {
    Next(String),
    End,
}

#[derive(Debug, Clone)]
pub(crate) enum State {
    Task {
        handler: String,
        io: Io,
        timeout_secs: Option<u64>,
        retry: Vec<Retrier>,
        catch: Vec<Catcher>,
        then: Then,
    },
    Pass {
        io: Io,
        result: Option<Value>,
        then: Then,
    },
    Wait {
        io: Io,
        seconds: Option<u64>,
        seconds_path: Option<Path>,
        then: Then,
    },
    Choice {
        io: Io,
        choices: Vec<(Rule, String)>,
        default: Option<String>,
    },
    Succeed {
        io: Io,
    },
    Fail {
        error: String,
        cause: String,
    },
}
