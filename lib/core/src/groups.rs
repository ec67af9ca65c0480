//! Joining and leaving groups, for SCIM and the admins alike: a member joins as read, within
//! [`GROUPS_PER_MEMBER`], one membership written per call, retried when the member moved.

use crate::domain::{AuditEntry, GROUPS_PER_MEMBER, Group, Member};
use crate::ids::UserId;
use crate::ports::{DirectoryStore, GroupStore, StoreError};

/// Attempts of an addition whose member moved meanwhile before it fails.
const ATTEMPTS: usize = 16;

/// Why a member could not join a group.
#[derive(Debug, thiserror::Error)]
pub enum JoinError {
    /// The user is not a member of the group's organisation (or, for SCIM, not provisioned).
    #[error("no such member")]
    NoMember,
    /// The group is gone.
    #[error("no such group")]
    NoGroup,
    /// The member is in [`GROUPS_PER_MEMBER`] groups already.
    #[error("a member may be in at most {GROUPS_PER_MEMBER} groups")]
    TooMany,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Puts `user` into `group`: `Ok(true)` when they joined, `Ok(false)` (writing nothing) when
/// they were in it already. `eligible` says whether a member may be added (SCIM: only
/// provisioned members); `audit` makes the entry for the member as read.
/// Each attempt reads the member and their groups, then writes one membership.
pub async fn join(
    directory: &dyn DirectoryStore, groups: &dyn GroupStore, group: &Group, user: &UserId,
    eligible: impl Fn(&Member) -> bool, audit: impl Fn(&Member) -> AuditEntry,
) -> Result<bool, JoinError> {
    for _ in 0..ATTEMPTS {
        let member = directory.get_member(&group.org, user).await?;
        let member = member.filter(&eligible).ok_or(JoinError::NoMember)?;
        let mine = groups.member_groups(&group.org, user).await?;
        if mine.contains(&group.id) {
            return Ok(false);
        }
        if mine.len() >= GROUPS_PER_MEMBER {
            return Err(JoinError::TooMany);
        }
        match groups
            .add_group_member(&group.id, &member, &audit(&member))
            .await
        {
            Ok(joined) => return Ok(joined),
            Err(StoreError::Conflict) => continue,
            Err(StoreError::Gone) => {
                // Which one went: the member (read again: gone) or the group.
                match groups.get_group(&group.org, &group.id).await? {
                    None => return Err(JoinError::NoGroup),
                    Some(_) => continue,
                }
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Conflict.into())
}
