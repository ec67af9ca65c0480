//! SCIM `/Groups` as use cases: the roles, listed under their names and read-only, beside the
//! organisation's groups, which the identity provider creates, renames, fills and deletes.
//! A group's members change one membership at a time ([`crate::groups::join`]); every member
//! named is checked to be a provisioned member of the organisation before anything is written.

use std::collections::BTreeSet;

use serde_json::Value;

use super::filter::Filter;
use super::group_input::{self, GroupEdit, GroupInput, no_such_user};
use super::{Directory, ROLES, ScimError};
use crate::domain::{
    AuditAction, GROUPS_PER_MEMBER, Group, GroupSource, Member, Role, group_name_key, is_role_name,
};
use crate::groups::{JoinError, join};
use crate::ids::{GroupId, OrgId, UserId};
use crate::ports::{MEMBERS_AT_ONCE, StoreError};

/// Memberships read from the store at once while a group's members are listed.
const MEMBERS_PAGE: usize = 1000;
/// Attempts of a rename that lost a race before the request fails.
const ATTEMPTS: usize = 16;

/// A group as SCIM shows it, with its provisioned members when they were asked for.
#[derive(Debug, Clone, PartialEq)]
pub enum ScimGroup {
    /// One of the service's roles: its id and name are the role's, and it is read-only.
    Role {
        role: Role,
        members: Option<Vec<Member>>,
    },
    /// One of the organisation's groups.
    Group {
        group: Group,
        members: Option<Vec<Member>>,
    },
}

impl ScimGroup {
    pub fn id(&self) -> &str {
        match self {
            Self::Role { role, .. } => role.as_str(),
            Self::Group { group, .. } => group.id.as_str(),
        }
    }

    pub fn display_name(&self) -> &str {
        match self {
            Self::Role { role, .. } => role.as_str(),
            Self::Group { group, .. } => &group.display_name,
        }
    }

    /// The values of a filterable attribute, for [`Filter::accepts`].
    pub fn values(&self, path: &str) -> Vec<String> {
        match (path, self) {
            ("displayName", _) => vec![self.display_name().to_owned()],
            ("id", _) => vec![self.id().to_owned()],
            ("externalId", Self::Group { group, .. }) => {
                group.external_id.iter().cloned().collect()
            }
            _ => Vec::new(),
        }
    }
}

fn too_many() -> ScimError {
    ScimError::InvalidValue(format!(
        "a member may be in at most {GROUPS_PER_MEMBER} groups"
    ))
}

fn name_taken() -> ScimError {
    ScimError::Uniqueness("a group with this displayName exists in the organisation".into())
}

impl Directory {
    /// The roles and groups passing `filter`: the roles first, then the groups by id. A
    /// `displayName` clause is answered from the names' uniqueness index.
    pub async fn list_groups(
        &self, org: &OrgId, filter: &Filter, with_members: bool,
    ) -> Result<Vec<ScimGroup>, ScimError> {
        let mut found = Vec::new();
        for role in ROLES {
            let listed = ScimGroup::Role {
                role,
                members: None,
            };
            if filter.accepts(|p| listed.values(p)) {
                found.push(self.role_group(org, role, with_members).await?);
            }
        }
        let groups = match filter.value_of("displayName") {
            Some(name) => (self.groups.find_group_by_name(org, &group_name_key(name)))
                .await?
                .into_iter()
                .collect(),
            None => self.groups.list_groups(org).await?,
        };
        for group in groups {
            let listed = ScimGroup::Group {
                group,
                members: None,
            };
            if filter.accepts(|p| listed.values(p)) {
                let ScimGroup::Group { group, .. } = listed else {
                    unreachable!()
                };
                found.push(self.group_with(group, with_members).await?);
            }
        }
        Ok(found)
    }

    /// A role or group by its id. Errors: `NotFound`.
    pub async fn get_group(
        &self, org: &OrgId, id: &str, with_members: bool,
    ) -> Result<ScimGroup, ScimError> {
        if let Some(role) = ROLES.into_iter().find(|r| r.as_str() == id) {
            return self.role_group(org, role, with_members).await;
        }
        let group = self.stored_group(org, id).await?;
        self.group_with(group, with_members).await
    }

    /// Creates a group from a POST body, then adds its members one by one.
    /// Errors: those of [`group_input::group_from_json`]; `Uniqueness` when a group or a role
    /// has the name (in any case); `InvalidValue` when a member is not a provisioned member
    /// of the organisation (nothing is written) or is in [`GROUPS_PER_MEMBER`] groups already.
    pub async fn create_group(&self, org: &OrgId, body: &Value) -> Result<ScimGroup, ScimError> {
        let input = group_input::group_from_json(body)?;
        if is_role_name(&input.display_name) {
            return Err(name_taken());
        }
        self.provisioned(org, &input.members).await?;
        let mut group = Group::new(
            org.clone(),
            input.display_name,
            GroupSource::Scim,
            self.clock.now(),
        );
        group.external_id = input.external_id;
        let audit = self
            .audit(org, AuditAction::GroupCreated, group.id.as_str())
            .became(&group.display_name);
        match self.groups.create_group(&group, &audit).await {
            Ok(()) => {}
            Err(StoreError::AlreadyExists | StoreError::Conflict) => return Err(name_taken()),
            Err(e) => return Err(e.into()),
        }
        for user in &input.members {
            self.add_member(&group, user).await?;
        }
        self.group_with(group, true).await
    }

    /// Replaces a group's name, `externalId` and members with a PUT body: the members that are
    /// not in the body leave, those new to it join. Errors: `NotFound`, `MethodNotAllowed`
    /// for a role (see [`ScimError::RoleReadOnly`]), and those of [`Directory::create_group`].
    pub async fn replace_group(
        &self, org: &OrgId, id: &str, body: &Value,
    ) -> Result<ScimGroup, ScimError> {
        let group = self.writable_group(org, id).await?;
        let GroupInput {
            display_name,
            external_id,
            members,
        } = group_input::group_from_json(body)?;
        self.provisioned(org, &members).await?;
        let group = self
            .rename(group, Some(display_name), Some(external_id))
            .await?;
        self.set_members(&group, &members).await?;
        self.group_with(group, true).await
    }

    /// Applies a PatchOp body, judged whole before the first write. Errors: `NotFound`,
    /// `RoleReadOnly`, those of [`group_input::group_edits`], and `InvalidValue` for a member
    /// who is not a provisioned member of the organisation.
    pub async fn patch_group(&self, org: &OrgId, id: &str, body: &Value) -> Result<(), ScimError> {
        let mut group = self.writable_group(org, id).await?;
        let edits = group_input::group_edits(body)?;
        for edit in &edits {
            if let GroupEdit::Rename(name) = edit
                && is_role_name(name)
            {
                return Err(name_taken());
            }
            if let GroupEdit::Add(users) | GroupEdit::Replace(users) = edit {
                self.provisioned(org, users).await?;
            }
        }
        for edit in edits {
            match edit {
                GroupEdit::Rename(name) => group = self.rename(group, Some(name), None).await?,
                GroupEdit::ExternalId(e) => group = self.rename(group, None, Some(e)).await?,
                GroupEdit::Add(users) => {
                    for user in &users {
                        self.add_member(&group, user).await?;
                    }
                }
                GroupEdit::Remove(users) => {
                    for user in &users {
                        self.remove_from(&group, user).await?;
                    }
                }
                GroupEdit::RemoveAll => self.set_members(&group, &[]).await?,
                GroupEdit::Replace(users) => self.set_members(&group, &users).await?,
            }
        }
        Ok(())
    }

    /// Deletes a group with its memberships. Errors: `NotFound`, `RoleReadOnly`.
    pub async fn delete_group(&self, org: &OrgId, id: &str) -> Result<(), ScimError> {
        let group = self.writable_group(org, id).await?;
        let audit = self
            .audit(org, AuditAction::GroupDeleted, group.id.as_str())
            .was(&group.display_name);
        match self.groups.delete_group(org, &group.id, &audit).await? {
            true => Ok(()),
            false => Err(ScimError::NotFound("group")),
        }
    }

    async fn role_group(
        &self, org: &OrgId, role: Role, with_members: bool,
    ) -> Result<ScimGroup, ScimError> {
        let members = match with_members {
            false => None,
            true => Some(
                (self.members.list_members(org).await?)
                    .into_iter()
                    .filter(|m| m.role == role && m.profile.is_some())
                    .collect(),
            ),
        };
        Ok(ScimGroup::Role { role, members })
    }

    async fn group_with(&self, group: Group, with_members: bool) -> Result<ScimGroup, ScimError> {
        let members = match with_members {
            false => None,
            true => {
                let ids = self.member_ids(&group).await?;
                let mut members = Vec::with_capacity(ids.len());
                for chunk in ids.chunks(MEMBERS_AT_ONCE) {
                    members.extend(self.members.get_members(&group.org, chunk).await?);
                }
                members.retain(|m| m.profile.is_some());
                members.sort_by(|a, b| a.user.cmp(&b.user));
                Some(members)
            }
        };
        Ok(ScimGroup::Group { group, members })
    }

    /// Every member's id of `group`, by id, read a page at a time.
    async fn member_ids(&self, group: &Group) -> Result<Vec<UserId>, ScimError> {
        let mut all: Vec<UserId> = Vec::new();
        loop {
            let page = (self.groups)
                .list_group_members(&group.org, &group.id, all.last(), MEMBERS_PAGE)
                .await?;
            let done = page.len() < MEMBERS_PAGE;
            all.extend(page);
            if done {
                return Ok(all);
            }
        }
    }

    async fn stored_group(&self, org: &OrgId, id: &str) -> Result<Group, ScimError> {
        let id = GroupId::parse(id).map_err(|_| ScimError::NotFound("group"))?;
        (self.groups.get_group(org, &id).await?).ok_or(ScimError::NotFound("group"))
    }

    /// The group `id`, which a write may change. Errors: `RoleReadOnly` for a role's id,
    /// `NotFound`.
    async fn writable_group(&self, org: &OrgId, id: &str) -> Result<Group, ScimError> {
        if ROLES.iter().any(|r| r.as_str() == id) {
            return Err(ScimError::RoleReadOnly);
        }
        self.stored_group(org, id).await
    }

    /// Errors: `InvalidValue` unless every one of `users` is a provisioned member of `org`.
    async fn provisioned(&self, org: &OrgId, users: &[UserId]) -> Result<(), ScimError> {
        for chunk in users.chunks(MEMBERS_AT_ONCE) {
            let found = self.members.get_members(org, chunk).await?;
            if found.iter().filter(|m| m.profile.is_some()).count() < chunk.len() {
                return Err(no_such_user());
            }
        }
        Ok(())
    }

    async fn add_member(&self, group: &Group, user: &UserId) -> Result<(), ScimError> {
        let audit = |m: &Member| {
            self.audit(&group.org, AuditAction::GroupMemberAdded, m.user.as_str())
                .target_named(m.user_name())
                .became(&group.display_name)
        };
        let provisioned = |m: &Member| m.profile.is_some();
        match join(
            self.members.as_ref(),
            self.groups.as_ref(),
            group,
            user,
            provisioned,
            audit,
        )
        .await
        {
            Ok(_) => Ok(()),
            Err(JoinError::NoMember) => Err(no_such_user()),
            Err(JoinError::NoGroup) => Err(ScimError::NotFound("group")),
            Err(JoinError::TooMany) => Err(too_many()),
            Err(JoinError::Store(e)) => Err(e.into()),
        }
    }

    async fn remove_from(&self, group: &Group, user: &UserId) -> Result<(), ScimError> {
        let audit = self
            .audit(&group.org, AuditAction::GroupMemberRemoved, user.as_str())
            .was(&group.display_name);
        self.groups
            .remove_group_member(&group.org, &group.id, user, &audit)
            .await?;
        Ok(())
    }

    /// Makes `users` the group's members: the others leave, then the new ones join.
    async fn set_members(&self, group: &Group, users: &[UserId]) -> Result<(), ScimError> {
        let current: BTreeSet<UserId> = self.member_ids(group).await?.into_iter().collect();
        let wanted: BTreeSet<&UserId> = users.iter().collect();
        for user in current.iter().filter(|u| !wanted.contains(u)) {
            self.remove_from(group, user).await?;
        }
        for user in users.iter().filter(|u| !current.contains(*u)) {
            self.add_member(group, user).await?;
        }
        Ok(())
    }

    /// The group with a new name and `externalId` (`None`: unchanged), written when either
    /// changed. Errors: `Uniqueness`, `NotFound`.
    async fn rename(
        &self, mut group: Group, name: Option<String>, external_id: Option<Option<String>>,
    ) -> Result<Group, ScimError> {
        for _ in 0..ATTEMPTS {
            let mut next = group.clone();
            next.display_name = name.clone().unwrap_or(next.display_name);
            next.external_id = external_id.clone().unwrap_or(next.external_id);
            if next == group {
                return Ok(group);
            }
            if next.name_key() != group.name_key() && is_role_name(&next.display_name) {
                return Err(name_taken());
            }
            next.version += 1;
            next.updated_at = self.clock.now().max(group.updated_at);
            let audit = self
                .audit(&group.org, AuditAction::GroupRenamed, group.id.as_str())
                .changed(Some(&group.display_name), &next.display_name);
            match self.groups.update_group(&group, &next, &audit).await {
                Ok(()) => return Ok(next),
                Err(StoreError::AlreadyExists) => return Err(name_taken()),
                Err(StoreError::Conflict) => {
                    group = self.stored_group(&group.org, group.id.as_str()).await?;
                }
                Err(StoreError::Gone) => return Err(ScimError::NotFound("group")),
                Err(e) => return Err(e.into()),
            }
        }
        Err(ScimError::internal("group update stayed contended"))
    }
}
