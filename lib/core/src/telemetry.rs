//! The service's metrics, as a closed catalogue: each metric's name, unit and labels are fixed
//! here, and every label takes its value from a small set the code names (an outcome, a model,
//! an integration's kind, a function), never a member, a session or an organisation. The use
//! cases record through the `metrics` facade; the runtime installs where they go (CloudWatch
//! embedded metrics on Lambda, a Prometheus endpoint locally, or nowhere: recording is then a
//! no-op). See `docs/operations.md`.
//!
//! A count is recorded where the thing is decided, so a step that Step Functions runs again
//! after its commit may count twice: metrics are at least once, the usage report is exact.

use std::time::Duration;

/// One metric of the catalogue: its name, what it counts, its unit and its labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Metric {
    pub name: &'static str,
    pub unit: Unit,
    pub labels: &'static [&'static str],
    /// The values each label takes, in the order of `labels`; an empty list for a label whose
    /// values a deployment names (its models, its functions).
    pub values: &'static [&'static [&'static str]],
    pub help: &'static str,
}

/// A metric's unit, as CloudWatch names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
}

/// Turns ended, by `outcome` (`answered`, `cancelled`, `failed`, `org_cap`, `member_cap`).
pub const TURNS: Metric = Metric {
    name: "turns",
    unit: Unit::Count,
    labels: &["outcome"],
    values: &[&TurnOutcome::NAMES],
    help: "Turns ended, by outcome.",
};
/// Turns that failed, by `reason` (the step error's name, [`crate::steps::errors::reason`]).
pub const TURN_FAILURES: Metric = Metric {
    name: "turn_failures",
    unit: Unit::Count,
    labels: &["reason"],
    values: &[&REASONS],
    help: "Turns that failed, by reason.",
};
/// From the question to the first words of its answer.
pub const FIRST_WORDS: Metric = Metric {
    name: "turn_first_words_ms",
    unit: Unit::Milliseconds,
    labels: &[],
    values: &[],
    help: "Milliseconds from a question to the first words of its answer.",
};
/// From the question to its whole answer.
pub const WHOLE_ANSWER: Metric = Metric {
    name: "turn_answer_ms",
    unit: Unit::Milliseconds,
    labels: &[],
    values: &[],
    help: "Milliseconds from a question to its whole answer.",
};
/// Calls to the model, by `model` and `outcome` (`ok`, `rate_limited`, `rejected`, `failed`).
pub const MODEL_CALLS: Metric = Metric {
    name: "model_calls",
    unit: Unit::Count,
    labels: &["model", "outcome"],
    values: &[&[], &ModelOutcome::NAMES],
    help: "Calls to the model, by model and outcome.",
};
/// Tokens the model read and wrote, by `model` and `direction` (`input`, `output`).
pub const MODEL_TOKENS: Metric = Metric {
    name: "model_tokens",
    unit: Unit::Count,
    labels: &["model", "direction"],
    values: &[&[], &["input", "output"]],
    help: "Tokens read and written by the model, by model and direction.",
};
/// What the model calls cost, in millionths of a dollar, by `model`.
pub const MODEL_COST: Metric = Metric {
    name: "model_cost_micros",
    unit: Unit::Count,
    labels: &["model"],
    values: &[&[]],
    help: "Millionths of a dollar spent on the model, by model.",
};
/// Tool calls, by `integration` (its kind: `documents`, `memory`, `connected`) and `outcome`
/// (`ok`, `failed`, `declined`).
pub const TOOL_CALLS: Metric = Metric {
    name: "tool_calls",
    unit: Unit::Count,
    labels: &["integration", "outcome"],
    values: &[&IntegrationKind::NAMES, &ToolOutcome::NAMES],
    help: "Tool calls, by the integration's kind and outcome.",
};
/// Refreshes of OAuth grants, by `outcome` (`refreshed`, `refused`, `failed`).
pub const OAUTH_REFRESHES: Metric = Metric {
    name: "oauth_refreshes",
    unit: Unit::Count,
    labels: &["outcome"],
    values: &[&RefreshOutcome::NAMES],
    help: "Refreshes of OAuth grants, by outcome.",
};
/// Runs the sweep found without a live execution, by `action` (`revived`, `ended`).
pub const SWEEP_RUNS: Metric = Metric {
    name: "sweep_runs",
    unit: Unit::Count,
    labels: &["action"],
    values: &[&["revived", "ended"]],
    help: "Runs the sweep revived or ended.",
};
/// Conditional writes of a session that lost to another writer (the step then reads again).
pub const STORE_CONFLICTS: Metric = Metric {
    name: "store_conflicts",
    unit: Unit::Count,
    labels: &[],
    values: &[],
    help: "Session writes that met another writer's and were tried again.",
};
/// Processes started (on Lambda, cold starts). Not by function: a series a function would
/// cost $0.30 a month each on CloudWatch; Lambda's log says which function started, and how
/// long its init took (`docs/operations.md`).
pub const COLD_STARTS: Metric = Metric {
    name: "cold_starts",
    unit: Unit::Count,
    labels: &[],
    values: &[],
    help: "Processes started (on Lambda, cold starts).",
};
/// Indexing attempts of documents, by `outcome` (`indexed`, `retried`, `failed`).
pub const INDEXING_JOBS: Metric = Metric {
    name: "indexing_jobs",
    unit: Unit::Count,
    labels: &["outcome"],
    values: &[&IndexingOutcome::NAMES],
    help: "Indexing attempts of documents, by outcome.",
};

/// Every metric the service records.
pub const CATALOGUE: &[Metric] = &[
    TURNS,
    TURN_FAILURES,
    FIRST_WORDS,
    WHOLE_ANSWER,
    MODEL_CALLS,
    MODEL_TOKENS,
    MODEL_COST,
    TOOL_CALLS,
    OAUTH_REFRESHES,
    SWEEP_RUNS,
    STORE_CONFLICTS,
    COLD_STARTS,
    INDEXING_JOBS,
];

/// Describes every metric of the catalogue to the installed recorder (its unit and help).
pub fn describe() {
    for m in CATALOGUE {
        let unit = match m.unit {
            Unit::Count => metrics::Unit::Count,
            Unit::Milliseconds => metrics::Unit::Milliseconds,
        };
        match m.unit {
            Unit::Count => metrics::describe_counter!(m.name, unit, m.help),
            Unit::Milliseconds => metrics::describe_histogram!(m.name, unit, m.help),
        }
    }
}

/// The reasons a turn fails for, as [`turn`] labels them: the step errors' names, `Timeout`
/// and `Other` ([`crate::steps::errors::reason`]).
pub const REASONS: [&str; 7] = [
    crate::steps::errors::AGENT,
    crate::steps::errors::AGENT_REJECTED,
    crate::steps::errors::TOOL,
    crate::steps::errors::STORE,
    crate::steps::errors::INPUT,
    "Timeout",
    "Other",
];

/// A label's values as an enum: its variants, and the name each is recorded with.
macro_rules! label {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value's name, as the metrics record it.
            pub const NAMES: [&'static str; [$($text),+].len()] = [$($text),+];

            /// The name this value is recorded with.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }
        }
    };
}

label!(
    /// How a turn ended; a failure's reason is counted apart ([`turn_failed`]).
    TurnOutcome {
        Answered => "answered",
        Cancelled => "cancelled",
        Failed => "failed",
        /// The organisation's monthly cost cap was reached.
        OrgCap => "org_cap",
        /// The member's own allowance was reached.
        MemberCap => "member_cap",
    }
);

/// Counts a turn ended so; a failed one is counted by [`turn_failed`], with its reason.
pub fn turn(outcome: TurnOutcome) {
    metrics::counter!(TURNS.name, "outcome" => outcome.as_str()).increment(1);
}

/// Counts a turn failed with the step error `error`: as `failed` in [`TURNS`], and by its
/// reason ([`crate::steps::errors::reason`]) in [`TURN_FAILURES`], so that an alarm reads the
/// failures whatever their reason as one series.
pub fn turn_failed(error: &str) {
    let reason = crate::steps::errors::reason(error);
    metrics::counter!(TURN_FAILURES.name, "reason" => reason).increment(1);
    turn(TurnOutcome::Failed);
}

/// Records how long the member waited for the first words of an answer, and for all of it.
pub fn answer_times(first_words: Duration, whole: Duration) {
    metrics::histogram!(FIRST_WORDS.name).record(first_words.as_secs_f64() * 1e3);
    metrics::histogram!(WHOLE_ANSWER.name).record(whole.as_secs_f64() * 1e3);
}

label!(
    /// How a call to the model ended.
    ModelOutcome {
        Ok => "ok",
        RateLimited => "rate_limited",
        Rejected => "rejected",
        Failed => "failed",
    }
);

/// Counts a call to `model`, and on success what it read, wrote and cost. `model` is the
/// model the deployment asks for: a deployment's few names, never a member's.
pub fn model_call(
    model: &str, outcome: ModelOutcome, tokens: Option<(u64, u64)>, cost_micros: u64,
) {
    let model = model.to_owned();
    metrics::counter!(MODEL_CALLS.name, "model" => model.clone(), "outcome" => outcome.as_str())
        .increment(1);
    if let Some((input, output)) = tokens {
        let tokens = |direction: &'static str| metrics::counter!(MODEL_TOKENS.name, "model" => model.clone(), "direction" => direction);
        tokens("input").increment(input);
        tokens("output").increment(output);
        metrics::counter!(MODEL_COST.name, "model" => model.clone()).increment(cost_micros);
    }
}

label!(
    /// The kind of integration a tool belongs to: a label of few values, whatever admins name
    /// their integrations.
    IntegrationKind {
        /// The organisation's documents (`search_documents`).
        Documents => "documents",
        /// The agent's memory of the member.
        Memory => "memory",
        /// An integration the organisation connected (an MCP server, the sample guide).
        Connected => "connected",
    }
);

label!(
    /// How a tool call ended.
    ToolOutcome {
        Ok => "ok",
        Failed => "failed",
        /// The member declined it, or left it unanswered until it expired.
        Declined => "declined",
    }
);

/// Counts a tool call.
pub fn tool_call(integration: IntegrationKind, outcome: ToolOutcome) {
    let (integration, outcome) = (integration.as_str(), outcome.as_str());
    metrics::counter!(TOOL_CALLS.name, "integration" => integration, "outcome" => outcome)
        .increment(1);
}

label!(
    /// How a refresh of an OAuth grant ended.
    RefreshOutcome {
        Refreshed => "refreshed",
        /// The authorization server refused the refresh token: the member connects again.
        Refused => "refused",
        /// It could not be reached, or its answer was lost.
        Failed => "failed",
    }
);

/// Counts a refresh.
pub fn oauth_refresh(outcome: RefreshOutcome) {
    metrics::counter!(OAUTH_REFRESHES.name, "outcome" => outcome.as_str()).increment(1);
}

/// Counts a run the sweep revived (`revived`) or ended as failed (`!revived`).
pub fn sweep_run(revived: bool) {
    let action = if revived { "revived" } else { "ended" };
    metrics::counter!(SWEEP_RUNS.name, "action" => action).increment(1);
}

/// Counts a session write that lost to another writer's.
pub fn store_conflict() {
    metrics::counter!(STORE_CONFLICTS.name).increment(1);
}

/// Counts the start of a process.
pub fn cold_start() {
    metrics::counter!(COLD_STARTS.name).increment(1);
}

label!(
    /// How an indexing attempt ended.
    IndexingOutcome {
        Indexed => "indexed",
        /// It failed and will be tried again.
        Retried => "retried",
        /// It failed for the last time: the document is `failed`.
        Failed => "failed",
    }
);

/// Counts an indexing attempt.
pub fn indexing_job(outcome: IndexingOutcome) {
    metrics::counter!(INDEXING_JOBS.name, "outcome" => outcome.as_str()).increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_label_of_the_catalogue_has_its_list_of_values() {
        for m in CATALOGUE {
            assert_eq!(m.labels.len(), m.values.len(), "{}", m.name);
        }
    }

    #[test]
    fn every_reason_a_step_error_maps_to_is_a_listed_reason() {
        for error in [
            "AgentFailed",
            "AgentRejected",
            "ToolUnavailable",
            "StoreUnavailable",
        ] {
            assert!(
                REASONS.contains(&crate::steps::errors::reason(error)),
                "{error}"
            );
        }
        for other in ["States.Timeout", "Lambda.Unknown", "States.TaskFailed"] {
            assert!(
                REASONS.contains(&crate::steps::errors::reason(other)),
                "{other}"
            );
        }
    }
}
