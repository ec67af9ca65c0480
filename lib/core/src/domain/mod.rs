//! The domain: organisations and their usage here; members, their data and integrations in
//! `member`; groups of members in `group`; the audit log in `audit`; sessions and their event
//! log in `session`; single sign-on in `sso`.

use serde::{Deserialize, Serialize};

use crate::clock::Timestamp;
use crate::ids::OrgId;

/// Characters of the first message that form a session's title.
pub const TITLE_CHARS: usize = 60;
/// Events returned by one transcript poll at most.
pub const TRANSCRIPT_PAGE: usize = 100;
/// Sessions returned by the list at most.
pub const SESSION_LIST_LIMIT: usize = 50;

/// The organisation's subscription tier; SCIM needs `Business`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plan {
    Free,
    Pro,
    Business,
}

/// Whether the organisation may use the service; a suspended one keeps its data but may not start
/// sessions or send messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OrgStatus {
    Active,
    Suspended,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Admin,
    Viewer,
}

/// The text form of an enum of names: `as_str`, `Display` and `FromStr`.
macro_rules! text_enum {
    ($ty:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        impl $ty {
            /// Every one, in the order declared.
            pub const ALL: &[Self] = &[$(Self::$variant),+];

            pub const fn as_str(self) -> &'static str {
                match self { $(Self::$variant => $text),+ }
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $($text => Ok(Self::$variant),)+
                    _ => Err(format!(concat!("expected one of: ", $($text, " "),+))),
                }
            }
        }
    };
}

text_enum!(Plan { Free => "free", Pro => "pro", Business => "business" });
text_enum!(OrgStatus { Active => "active", Suspended => "suspended" });
text_enum!(Role { Admin => "admin", Viewer => "viewer" });

mod approval;
mod audit;
mod caps;
mod claim;
mod document;
mod draft;
mod group;
mod line;
mod member;
mod memory;
mod oauth;
mod session;
mod sso;
mod tally;
mod title;

pub use approval::*;
pub use audit::*;
pub use caps::*;
pub use claim::*;
pub use document::*;
pub use draft::*;
pub use group::*;
pub use line::*;
pub use member::*;
pub use memory::*;
pub use oauth::*;
pub use session::*;
pub use sso::*;
pub use tally::*;
pub use title::*;

/// An organisation (tenant) and its limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Org {
    pub id: OrgId,
    pub name: String,
    pub plan: Plan,
    pub status: OrgStatus,
    /// Queries (opening and follow-up messages) allowed per calendar month; `None` is unlimited.
    pub monthly_query_quota: Option<u64>,
    /// Spend allowed per calendar month, in millionths of a US dollar; `None` is unlimited.
    pub cost_cap_micros: Option<u64>,
    pub created_at: Timestamp,
    /// An admin switched the agent's memory off for every member: nothing is read or saved.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub memory_off: bool,
    /// Each member's monthly allowance, unless an admin set one for the member
    /// ([`Member::caps`]).
    #[serde(default)]
    pub member_caps: MemberCaps,
    /// SHA-256 (hex) of the organisation's current SCIM token; never the token itself. Kept
    /// apart from the other settings by the store, so only
    /// [`crate::ports::OrgStore::set_scim_token`] changes it.
    #[serde(skip)]
    pub scim_token_sha256: Option<String>,
    /// When the current SCIM token was generated (the time of its audit entry).
    #[serde(skip)]
    pub scim_token_created_at: Option<Timestamp>,
    /// Single sign-on through the organisation's OpenID provider; `None` until configured.
    /// Kept apart from the other settings by the store, so only
    /// [`crate::ports::OrgStore::set_sso`] changes it.
    #[serde(skip)]
    pub sso: Option<SsoConfig>,
}

impl Org {
    /// A new active organisation on `plan`, created `now`: no quota or cost cap beyond the
    /// plan's, no SCIM token, no single sign-on.
    pub fn new(id: OrgId, name: impl Into<String>, plan: Plan, now: Timestamp) -> Self {
        Self {
            id,
            name: name.into(),
            plan,
            status: OrgStatus::Active,
            monthly_query_quota: None,
            cost_cap_micros: None,
            created_at: now,
            memory_off: false,
            member_caps: MemberCaps::UNLIMITED,
            scim_token_sha256: None,
            scim_token_created_at: None,
            sso: None,
        }
    }

    /// Whether members may start sessions and send messages.
    pub fn allows_sessions(&self) -> bool {
        self.status == OrgStatus::Active
    }

    /// Whether members sign in through the organisation's provider: SSO is configured and on.
    /// SCIM needs it too.
    pub fn sso_active(&self) -> bool {
        self.sso.as_ref().is_some_and(|s| s.enabled)
    }
}

/// The largest monthly query quota an organisation can be given: far beyond any real one, and
/// within every store's integer range.
pub const QUOTA_MAX: u64 = 1_000_000_000_000;
/// The largest monthly cost cap, in US dollars.
pub const COST_CAP_MAX_USD: f64 = 1_000_000_000.0;

/// An organisation's usage in one calendar month.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub queries: u64,
    pub cost_micros: u64,
}

/// Renders millionths of a dollar as dollars.
pub fn micros_to_usd(micros: u64) -> f64 {
    micros as f64 / 1_000_000.0
}
