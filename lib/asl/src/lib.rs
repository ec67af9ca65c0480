//! An in-process interpreter of Amazon States Language: loads a state machine definition, the
//! JSON that Step Functions runs, and executes it on tokio. It runs Task, Choice, Pass, Wait,
//! Succeed and Fail states with Retry, Catch, `TimeoutSeconds`, JSONPath
//! `InputPath`/`Parameters`/`ResultPath`/`OutputPath`, the context object's execution and state
//! machine fields in `Parameters`, and one service integration, `states:startExecution`; anything
//! else is refused when the definition loads. Task states call the handlers of a [`Tasks`]
//! implementation, named by their resource ([`handler_of`]).

mod choice;
mod data;
mod definition;
mod load;
mod path;
mod resource;
mod run;
mod task;

pub use definition::{LoadError, StateMachine};
pub use resource::{START_EXECUTION, START_EXECUTION_RESOURCE, handler_of};
pub use run::{Execution, MAX_TRANSITIONS, Observer, Options, TracingObserver};
pub use task::{TaskError, Tasks};
