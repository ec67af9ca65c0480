//! The admin API's wire format: request bodies and queries, parsed into domain values at the
//! edge, and the views clients read, one module per part of the API. Secrets go one way: the
//! SSO client secret and members' credentials are written, never read back; the SCIM token is
//! shown once, when made. Here: what the parts share (paging, a user id from the path).

mod audit;
mod documents;
mod groups;
mod integrations;
mod limits;
mod members;
mod sso;
mod usage;

pub use audit::*;
pub use documents::*;
pub use groups::*;
pub use integrations::*;
pub use limits::*;
pub use members::*;
pub use sso::*;
pub use usage::*;

use knowledge_core::ids::UserId;

use crate::error::ApiError;
use crate::extract::QueryParams;

/// Page sizes a list answers at most, and by default.
const PAGE_MAX: usize = 100;
const PAGE_DEFAULT: usize = 50;

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::InvalidField(message.into())
}

/// `limit` as sent: 1 to [`PAGE_MAX`], [`PAGE_DEFAULT`] when absent.
fn page_limit(q: &QueryParams) -> Result<usize, ApiError> {
    match q.get("limit") {
        None => Ok(PAGE_DEFAULT),
        Some(l) => l
            .parse::<usize>()
            .ok()
            .filter(|l| (1..=PAGE_MAX).contains(l))
            .ok_or_else(|| invalid(format!("limit must be a whole number from 1 to {PAGE_MAX}"))),
    }
}

/// A member's user id from the path. Errors: 400 for one not of the user-id form.
pub fn user_id(raw: &str) -> Result<UserId, ApiError> {
    UserId::parse(raw).map_err(|e| invalid(e.to_string()))
}
