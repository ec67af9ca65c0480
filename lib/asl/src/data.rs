//! Input and output processing: what a state works on (`InputPath`, then `Parameters`) and
//! what it hands on (`ResultPath`, then `OutputPath`).

use serde_json::{Value, json};

use crate::definition::Io;
use crate::path::Path;
use crate::task::{TaskError, runtime};

/// What `path` (`InputPath` or `OutputPath`) selects of `data`: all of it when absent, `{}`
/// when null. Errors: the path selects nothing.
pub(crate) fn select(path: &Option<Option<Path>>, data: Value) -> Result<Value, TaskError> {
    match path {
        None => Ok(data),
        Some(None) => Ok(json!({})),
        Some(Some(p)) => p
            .get(&data)
            .cloned()
            .ok_or_else(|| runtime(format!("the path {:?} selects nothing", p.as_str()))),
    }
}

/// `result` placed into `input` at `path` (`ResultPath`): the result alone when absent, the
/// input unchanged when null. Errors: the path cannot be written in `input`.
pub(crate) fn place(
    path: &Option<Option<Path>>, mut input: Value, result: Value,
) -> Result<Value, TaskError> {
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
    pub(crate) fn effective(&self, input: &Value, context: &Value) -> Result<Value, TaskError> {
        let selected = select(&self.input_path, input.clone())?;
        match &self.parameters {
            Some(t) => t.render(&selected, context).map_err(runtime),
            None => Ok(selected),
        }
    }

    /// `ResultPath`, then `OutputPath`: what the state hands on.
    pub(crate) fn output(&self, input: Value, result: Value) -> Result<Value, TaskError> {
        select(&self.output_path, place(&self.result_path, input, result)?)
    }
}
