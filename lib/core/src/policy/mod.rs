//! Policy: the rules the use cases apply that a deployment tunes, apart from the domain's
//! invariants: per-user rate limits, and what a model's tokens cost.

pub mod limits;
pub mod pricing;
