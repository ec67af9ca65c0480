//! Groups an admin makes, for organisations without SCIM: list, create, rename, delete, and
//! their members added and removed. A group the identity provider pushed is read-only here
//! (409 `group_pushed_by_scim`): only the provider changes it. Every change is audited.

use crate::CoreError;
use crate::domain::{AuditAction, GROUP_NAME_MAX_CHARS, Group, GroupSource, is_role_name};
use crate::groups::{JoinError, join};
use crate::ids::{GroupId, UserId};
use crate::ports::{MEMBERS_AT_ONCE, StoreError};

use super::{Admin, Administration, MemberPage};

/// A group's name as an admin typed it, trimmed. Errors: empty, too long, control characters,
/// or a role's name (`admin`, `viewer` in any case: 409 `group_name_taken`).
fn group_name(name: &str) -> Result<String, CoreError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(CoreError::invalid("empty_field", "name must not be empty"));
    }
    if name.chars().count() > GROUP_NAME_MAX_CHARS {
        return Err(CoreError::invalid(
            "too_long",
            format!("name must be at most {GROUP_NAME_MAX_CHARS} characters"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(CoreError::invalid(
            "invalid_field",
            "name must be one line of text",
        ));
    }
    if is_role_name(name) {
        return Err(taken());
    }
    Ok(name.to_owned())
}

fn taken() -> CoreError {
    CoreError::conflict(
        "group_name_taken",
        "another group (or a role) has this name",
    )
}

impl Administration {
    /// Every group of the organisation, by name.
    pub async fn groups(&self, admin: &Admin) -> Result<Vec<Group>, CoreError> {
        let mut groups = self.stores.groups.list_groups(&admin.org).await?;
        groups.sort_by_key(Group::name_key);
        Ok(groups)
    }

    /// A page of at most `limit` members of the group `id` (any source), by user id, after
    /// `after`; `next` is where the following page starts, `None` on the last. A member removed
    /// from the organisation meanwhile is left out. Errors: `NotFound` for a group not of the
    /// organisation.
    pub async fn group_members(
        &self, admin: &Admin, id: &GroupId, after: Option<&UserId>, limit: usize,
    ) -> Result<MemberPage, CoreError> {
        (self.stores.groups.get_group(&admin.org, id).await?)
            .ok_or(CoreError::NotFound("group"))?;
        let mut ids = (self.stores.groups)
            .list_group_members(&admin.org, id, after, limit + 1)
            .await?;
        let next = match ids.len() > limit {
            true => {
                ids.truncate(limit);
                ids.last().cloned()
            }
            false => None,
        };
        let mut members = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(MEMBERS_AT_ONCE) {
            let found = (self.stores.directory)
                .get_members(&admin.org, chunk)
                .await?;
            members.extend(found);
        }
        members.sort_by(|a, b| a.user.cmp(&b.user));
        Ok(MemberPage { members, next })
    }

    /// A group the admin may change: it exists in the organisation (else `NotFound`) and was
    /// made by an admin (else 409 `group_pushed_by_scim`).
    async fn own_group(&self, admin: &Admin, id: &GroupId) -> Result<Group, CoreError> {
        let group = (self.stores.groups.get_group(&admin.org, id).await?)
            .ok_or(CoreError::NotFound("group"))?;
        if group.source == GroupSource::Scim {
            return Err(CoreError::conflict(
                "group_pushed_by_scim",
                "the identity provider pushed this group: change it there",
            ));
        }
        Ok(group)
    }

    /// Creates a group named `name`. Errors: a bad name; 409 `group_name_taken` when another
    /// group (in any letter case) or a role has it.
    pub async fn create_group(&self, admin: &Admin, name: &str) -> Result<Group, CoreError> {
        let name = group_name(name)?;
        let group = Group::new(
            admin.org.clone(),
            name,
            GroupSource::Admin,
            self.clock.now(),
        );
        let audit = admin
            .audit(
                group.created_at,
                AuditAction::GroupCreated,
                group.id.as_str(),
            )
            .target_named(Some(&group.display_name));
        match self.stores.groups.create_group(&group, &audit).await {
            Ok(()) => Ok(group),
            Err(StoreError::AlreadyExists) => Err(taken()),
            Err(e) => Err(e.into()),
        }
    }

    /// Renames an admin's group; the same name again changes nothing. Errors: as
    /// [`Self::create_group`], `NotFound`, and 409 `group_pushed_by_scim`.
    pub async fn rename_group(
        &self, admin: &Admin, id: &GroupId, name: &str,
    ) -> Result<Group, CoreError> {
        let name = group_name(name)?;
        loop {
            let group = self.own_group(admin, id).await?;
            if group.display_name == name {
                return Ok(group);
            }
            let now = self.clock.now();
            let next = Group {
                display_name: name.clone(),
                version: group.version + 1,
                updated_at: now,
                ..group.clone()
            };
            let audit = admin
                .audit(now, AuditAction::GroupRenamed, id.as_str())
                .target_named(Some(&name));
            match self.stores.groups.update_group(&group, &next, &audit).await {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict) => continue,
                Err(StoreError::Gone) => return Err(CoreError::NotFound("group")),
                Err(StoreError::AlreadyExists) => return Err(taken()),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Deletes an admin's group and its memberships. Errors: `NotFound`, 409
    /// `group_pushed_by_scim`.
    pub async fn delete_group(&self, admin: &Admin, id: &GroupId) -> Result<(), CoreError> {
        let group = self.own_group(admin, id).await?;
        let audit = admin
            .audit(self.clock.now(), AuditAction::GroupDeleted, id.as_str())
            .target_named(Some(&group.display_name));
        match self
            .stores
            .groups
            .delete_group(&admin.org, id, &audit)
            .await?
        {
            true => Ok(()),
            false => Err(CoreError::NotFound("group")),
        }
    }

    /// Puts the member `user` into an admin's group: `Ok(false)` when they were in it already.
    /// Errors: `NotFound` (no such group or member), 409 `group_pushed_by_scim`, 409
    /// `too_many_groups` past [`crate::domain::GROUPS_PER_MEMBER`].
    pub async fn add_group_member(
        &self, admin: &Admin, id: &GroupId, user: &UserId,
    ) -> Result<bool, CoreError> {
        let group = self.own_group(admin, id).await?;
        let now = self.clock.now();
        let audit = |member: &crate::domain::Member| {
            admin
                .audit_member(now, AuditAction::GroupMemberAdded, member)
                .became(&group.display_name)
        };
        let joined = join(
            self.stores.directory.as_ref(),
            self.stores.groups.as_ref(),
            &group,
            user,
            |_| true,
            audit,
        );
        match joined.await {
            Ok(joined) => Ok(joined),
            Err(JoinError::NoMember) => Err(CoreError::NotFound("member")),
            Err(JoinError::NoGroup) => Err(CoreError::NotFound("group")),
            Err(JoinError::TooMany) => Err(CoreError::conflict(
                "too_many_groups",
                JoinError::TooMany.to_string(),
            )),
            Err(JoinError::Store(e)) => Err(e.into()),
        }
    }

    /// Takes `user` out of an admin's group: `Ok(false)` when they were not in it. Errors:
    /// `NotFound` (no such group), 409 `group_pushed_by_scim`.
    pub async fn remove_group_member(
        &self, admin: &Admin, id: &GroupId, user: &UserId,
    ) -> Result<bool, CoreError> {
        let group = self.own_group(admin, id).await?;
        let audit = admin
            .audit(
                self.clock.now(),
                AuditAction::GroupMemberRemoved,
                user.as_str(),
            )
            .was(&group.display_name);
        Ok(self
            .stores
            .groups
            .remove_group_member(&admin.org, id, user, &audit)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_name_in_any_case_is_taken_and_a_name_is_trimmed() {
        assert_eq!(group_name("  Finance ").unwrap(), "Finance");
        for role in ["admin", "Viewer", " ADMIN "] {
            assert!(
                matches!(
                    group_name(role),
                    Err(CoreError::Conflict {
                        code: "group_name_taken",
                        ..
                    })
                ),
                "{role}"
            );
        }
        assert!(group_name("").is_err());
        assert!(group_name("a\nb").is_err());
        assert!(group_name(&"x".repeat(GROUP_NAME_MAX_CHARS + 1)).is_err());
    }
}
