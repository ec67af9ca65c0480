//! Each member's monthly allowance: a number of questions and a spend, set for every member by
//! the organisation and overridden for one by an admin.

use serde::{Deserialize, Serialize};

/// A member's allowance in one calendar month: questions and spend (millionths of a US dollar);
/// `None` is unlimited, `Some(0)` refuses every question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemberCaps {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queries: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_micros: Option<u64>,
}

impl MemberCaps {
    /// No allowance: every question is counted, none is refused for the member's own usage.
    pub const UNLIMITED: Self = Self {
        queries: None,
        cost_micros: None,
    };

    /// Whether usage of `queries` questions and `cost_micros` spend leaves room for another
    /// question: the spend is checked before the question count, as the organisation's are.
    pub fn reached(&self, usage: super::Usage) -> bool {
        self.cost_micros.is_some_and(|cap| usage.cost_micros >= cap)
            || self.queries.is_some_and(|cap| usage.queries >= cap)
    }
}
