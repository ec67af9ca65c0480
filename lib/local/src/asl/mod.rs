//! The local workflow engine: loads an Amazon States Language definition (the same
//! `infra/statemachine/agent.asl.json` that Step Functions runs) and executes it in-process on
//! tokio. It runs Task, Choice, Pass, Wait, Succeed and Fail states with Retry, Catch,
//! `TimeoutSeconds`, JSONPath `InputPath`/`Parameters`/`ResultPath`/`OutputPath`, the context
//! object's execution and state machine fields in `Parameters`, and one service integration,
//! `states:startExecution`; anything else is refused when the definition loads.

mod definition;
mod path;
mod run;

pub use definition::{
    LoadError, START_EXECUTION, START_EXECUTION_RESOURCE, StateMachine, handler_of,
};
pub use run::{
    EXECUTION_ID_PREFIX, Execution, LOCAL_MACHINE_ID, MAX_TRANSITIONS, Observer, Options,
    TaskError, Tasks, TracingObserver,
};

/// The agent workflow's definition, compiled in from `infra/`.
pub const AGENT_DEFINITION: &str = include_str!("../../../../infra/statemachine/agent.asl.json");
