//! What the admin exports read: the audit log filtered by date range, action and actor, and a
//! month's usage per member, one page at a time (a year of entries, or a million members'
//! months, is never held at once).

use super::{Admin, Administration};
use crate::clock::Timestamp;
use crate::domain::{AuditAction, AuditCursor, AuditEntry, Member, MonthUsage};
use crate::error::CoreError;
use crate::ids::UserId;

/// Entries (or members' months) read from the store for one page of an export: at most
/// [`crate::ports::MEMBERS_AT_ONCE`].
pub const EXPORT_PAGE: usize = 100;
const _: () = assert!(EXPORT_PAGE <= crate::ports::MEMBERS_AT_ONCE);

/// Who acted, as an export filters it: the three [`crate::domain::Actor`]s, with an admin at
/// the command line told apart from one in the admin API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActorFilter {
    /// The identity provider, over SCIM.
    Scim,
    /// A member in the admin API.
    Admin,
    /// A member acting for themselves (signing out, connecting an account).
    Member,
    /// An operator at the command line.
    CommandLine,
}

impl ActorFilter {
    /// The wire names: `scim`, `admin`, `member`, `command-line`.
    pub fn parse(raw: &str) -> Option<Self> {
        Some(match raw {
            "scim" => Self::Scim,
            "admin" => Self::Admin,
            "member" => Self::Member,
            "command-line" => Self::CommandLine,
            _ => return None,
        })
    }

    fn admits(self, e: &AuditEntry) -> bool {
        use crate::domain::Actor;
        match self {
            Self::Scim => e.actor == Actor::Scim,
            Self::Member => e.actor == Actor::Member,
            Self::Admin => e.actor == Actor::Admin && !e.from_command_line(),
            Self::CommandLine => e.from_command_line(),
        }
    }
}

/// Which entries an export holds: written at or after `from` and before `until`, of `action`
/// and `actor` when given.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub from: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub action: Option<AuditAction>,
    pub actor: Option<ActorFilter>,
}

/// One page of an export, newest first, and where the next starts (`None`: the export is
/// complete).
#[derive(Debug)]
pub struct ExportPage {
    pub entries: Vec<AuditEntry>,
    pub next: Option<AuditCursor>,
}

/// Where an export starts: before `until`, or at the newest entry.
pub fn export_start(filter: &AuditFilter) -> Option<AuditCursor> {
    // An empty id sorts before every entry's: the cursor excludes `until` itself.
    filter.until.map(|at| AuditCursor {
        at,
        id: String::new(),
    })
}

/// A month's usage of one member, for the usage export.
#[derive(Debug, Clone)]
pub struct MemberMonth {
    pub user: UserId,
    /// `None` once removed (their usage stays counted).
    pub member: Option<Member>,
    pub usage: MonthUsage,
}

impl Administration {
    /// The entries of `filter` among the [`EXPORT_PAGE`] stored before `before`: one store
    /// read. A page may hold none and still have a `next` (the filter passed over it);
    /// `next` is `None` once the log ends or passes `filter.from`. Errors: the store's.
    pub async fn audit_export_page(
        &self, admin: &Admin, filter: &AuditFilter, before: Option<&AuditCursor>,
    ) -> Result<ExportPage, CoreError> {
        let batch = (self.stores.directory)
            .list_audit(&admin.org, before, EXPORT_PAGE)
            .await?;
        let mut next = (batch.len() == EXPORT_PAGE)
            .then(|| batch.last().map(AuditEntry::cursor))
            .flatten();
        let mut entries = Vec::with_capacity(batch.len());
        for e in batch {
            if filter.from.is_some_and(|from| e.at < from) {
                next = None;
                break;
            }
            let action = filter.action.is_none_or(|a| a == e.action);
            if action && filter.actor.is_none_or(|a| a.admits(&e)) {
                entries.push(e);
            }
        }
        Ok(ExportPage { entries, next })
    }

    /// The members' months of `month` (`YYYY-MM`) whose user id sorts after `after`, at most
    /// [`EXPORT_PAGE`], by user id, each with the member as stored now: two store reads (a
    /// page of the month's member counters, then those members at once). An empty page ends
    /// the export. Errors: the store's.
    pub async fn usage_export_page(
        &self, admin: &Admin, month: &str, after: Option<&UserId>,
    ) -> Result<Vec<MemberMonth>, CoreError> {
        let page = (self.stores.limits)
            .list_member_usage_after(&admin.org, month, after, EXPORT_PAGE)
            .await?;
        self.named(admin, page).await
    }

    /// `months` with their members as stored now, read at once (at most
    /// [`crate::ports::MEMBERS_AT_ONCE`]; one `BatchGetItem` on DynamoDB), in the same order;
    /// a removed member's is `None`.
    pub(super) async fn named(
        &self, admin: &Admin, months: Vec<(UserId, MonthUsage)>,
    ) -> Result<Vec<MemberMonth>, CoreError> {
        let users: Vec<UserId> = months.iter().map(|(user, _)| user.clone()).collect();
        let mut members: std::collections::HashMap<UserId, Member> = (self.stores.directory)
            .get_members(&admin.org, &users)
            .await?
            .into_iter()
            .map(|m| (m.user.clone(), m))
            .collect();
        Ok(months
            .into_iter()
            .map(|(user, usage)| MemberMonth {
                member: members.remove(&user),
                user,
                usage,
            })
            .collect())
    }
}
