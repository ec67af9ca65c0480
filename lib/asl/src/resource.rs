//! The Task resources the engine knows: which handler of [`crate::Tasks`] a Task's `Resource`
//! names, as SAM's `DefinitionSubstitutions` would fill it in, and the one service integration.

/// The one service integration the engine runs, request-response: starting an execution of a
/// state machine (a machine may start its own successor this way). A Task with this resource
/// calls the handler named [`START_EXECUTION`] with its rendered `Parameters`
/// (`StateMachineArn`, `Name`, `Input`); what starting means is that handler's business.
pub const START_EXECUTION_RESOURCE: &str = "arn:aws:states:::states:startExecution";
/// The handler name a [`START_EXECUTION_RESOURCE`] Task is invoked under.
pub const START_EXECUTION: &str = "states:startExecution";

/// The handler a Task's resource names: `${NameFunctionArn}` is `Name` (ASCII letters and
/// digits), the placeholder SAM's `DefinitionSubstitutions` fills in with the function's ARN,
/// and the built-in [`START_EXECUTION_RESOURCE`] is [`START_EXECUTION`]. Any other resource
/// names no handler.
pub fn handler_of(resource: &str) -> Option<&str> {
    if resource == START_EXECUTION_RESOURCE {
        return Some(START_EXECUTION);
    }
    resource
        .strip_prefix("${")?
        .strip_suffix("FunctionArn}")
        .filter(|name| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric()))
}
