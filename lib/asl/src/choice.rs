//! Choice rules: the comparisons, `And`, `Or` and `Not`, evaluated on a Choice state's input.

use serde_json::Value;

use crate::definition::{Comparison, Rule};
use crate::task::{TaskError, runtime};

impl Rule {
    /// Whether the rule holds for `data`. Errors: a comparison other than `IsPresent` on a
    /// variable that is missing.
    pub(crate) fn holds(&self, data: &Value) -> Result<bool, TaskError> {
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
