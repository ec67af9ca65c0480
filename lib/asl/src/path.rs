//! The JSONPath subset of Amazon States Language that the engine reads and writes with:
//! `$`, `$.field.field` and `$.list[0]` reference paths, and `Parameters` templates whose
//! `key.$` entries take their value from a path, or from the context object (`$$.Execution.Id`
//! and the other fields of [`CONTEXT_FIELDS`]).

use serde_json::{Map, Value};

/// One step of a reference path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Field(String),
    Index(usize),
}

/// A reference path such as `$.step.turn`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Path {
    text: String,
    segments: Vec<Segment>,
}

impl Path {
    /// Parses a reference path. Errors name what is unsupported: context paths (`$$`),
    /// wildcards, filters, slices and quoted fields.
    pub fn parse(text: &str) -> Result<Self, String> {
        let Some(mut rest) = text.strip_prefix('$') else {
            return Err(format!("path {text:?} must start with $"));
        };
        if rest.starts_with('$') {
            return Err(format!(
                "context object path {text:?} is not supported by the local engine"
            ));
        }
        let mut segments = vec![];
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let name = &after[..end];
                if name.is_empty() || name.contains(['*', '@', '?', '\'', '"', ' ']) {
                    return Err(format!("path {text:?}: unsupported field {name:?}"));
                }
                segments.push(Segment::Field(name.to_owned()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end = after
                    .find(']')
                    .ok_or_else(|| format!("path {text:?}: unclosed ["))?;
                let index = after[..end].parse().map_err(|_| {
                    format!("path {text:?}: only numeric indexes are supported in [...]")
                })?;
                segments.push(Segment::Index(index));
                rest = &after[end + 1..];
            } else {
                return Err(format!(
                    "path {text:?}: expected . or [ after {:?}",
                    &text[..text.len() - rest.len()]
                ));
            }
        }
        Ok(Self {
            text: text.to_owned(),
            segments,
        })
    }

    /// The path as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The value at this path in `data`, if there is one.
    pub fn get<'a>(&self, data: &'a Value) -> Option<&'a Value> {
        self.segments.iter().try_fold(data, |v, s| match s {
            Segment::Field(name) => v.get(name),
            Segment::Index(i) => v.get(*i),
        })
    }

    /// Writes `value` at this path in `data`, creating the objects on the way, as `ResultPath`
    /// does. `$` replaces `data` whole. Errors when the way goes through a value that is not an
    /// object, or through an index.
    pub fn set(&self, data: &mut Value, value: Value) -> Result<(), String> {
        let mut at = data;
        for s in &self.segments {
            let Segment::Field(name) = s else {
                return Err(format!("cannot write through an index in {:?}", self.text));
            };
            if at.is_null() {
                *at = Value::Object(Map::new());
            }
            let Value::Object(map) = at else {
                return Err(format!(
                    "cannot write {:?}: not an object on the way",
                    self.text
                ));
            };
            at = map.entry(name.clone()).or_insert(Value::Null);
        }
        *at = value;
        Ok(())
    }
}

/// The context object's fields a template may read: the execution's and the state machine's.
pub const CONTEXT_FIELDS: [&str; 6] = [
    "$$.Execution.Id",
    "$$.Execution.Name",
    "$$.Execution.StartTime",
    "$$.Execution.Input",
    "$$.StateMachine.Id",
    "$$.StateMachine.Name",
];

/// A `Parameters` template: the JSON as written, with every `key.$` entry resolved from a path
/// in the state's input or in the context object.
#[derive(Debug, Clone, PartialEq)]
pub enum Template {
    Literal(Value),
    Path(Path),
    Context(Path),
    Object(Vec<(String, Template)>),
    Array(Vec<Template>),
}

impl Template {
    /// Compiles a template. Errors: a `key.$` whose value is not a supported path, such as an
    /// intrinsic function (`States.Format(...)`).
    pub fn parse(value: &Value) -> Result<Self, String> {
        Ok(match value {
            Value::Object(map) => Self::Object(
                map.iter()
                    .map(|(key, v)| match key.strip_suffix(".$") {
                        Some(name) => {
                            let text = v.as_str().ok_or_else(|| {
                                format!("{key:?} must be a string path")
                            })?;
                            if text.starts_with("States.") {
                                return Err(format!(
                                    "{key:?}: intrinsic functions are not supported by the local engine"
                                ));
                            }
                            if let Some(in_context) = text.strip_prefix('$')
                                && in_context.starts_with('$')
                            {
                                if !CONTEXT_FIELDS.contains(&text) {
                                    return Err(format!(
                                        "context object path {text:?} is not supported by the \
                                         local engine"
                                    ));
                                }
                                return Ok((
                                    name.to_owned(),
                                    Self::Context(Path::parse(in_context)?),
                                ));
                            }
                            Ok((name.to_owned(), Self::Path(Path::parse(text)?)))
                        }
                        None => Ok((key.clone(), Self::parse(v)?)),
                    })
                    .collect::<Result<_, String>>()?,
            ),
            Value::Array(items) => {
                Self::Array(items.iter().map(Self::parse).collect::<Result<_, _>>()?)
            }
            other => Self::Literal(other.clone()),
        })
    }

    /// The template filled in from `data` and the `context` object. Errors name a path that
    /// selects nothing.
    pub fn render(&self, data: &Value, context: &Value) -> Result<Value, String> {
        let get = |p: &Path, from: &Value| {
            p.get(from)
                .cloned()
                .ok_or_else(|| format!("the path {:?} selects nothing", p.as_str()))
        };
        Ok(match self {
            Self::Literal(v) => v.clone(),
            Self::Path(p) => get(p, data)?,
            Self::Context(p) => get(p, context)?,
            Self::Object(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, t)| Ok((k.clone(), t.render(data, context)?)))
                    .collect::<Result<_, String>>()?,
            ),
            Self::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|t| t.render(data, context))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }
}

#[cfg(test)]
mod tests;
