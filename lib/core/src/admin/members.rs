//! The organisation's members: the list and its search, adding and inviting, naming, roles,
//! a member's own allowance, and removal. An organisation always keeps an admin: a demotion or
//! removal of an admin names another admin as its keeper, and the store refuses it if that
//! keeper changed meanwhile (see [`crate::ports::DirectoryStore::update_member_keeping`]).

use crate::domain::{
    AuditAction, Member, MemberCaps, Profile, Role, USER_NAME_MAX_CHARS, user_name_key,
};
use crate::error::{Chain, CoreError};
use crate::ids::UserId;
use crate::ports::StoreError;
use crate::service::cancel_member_turns;

use super::{Admin, Administration, settings};

/// Members read from the store per request at most while searching, so that a search of a
/// large organisation answers in bounded time; the page says where to go on.
const SEARCH_BUDGET: usize = 1000;
/// Members read per store request while searching.
const SEARCH_BATCH: usize = 100;
/// Rounds of re-reading a member that changed concurrently before giving up.
const ATTEMPTS: usize = 16;

/// A page of members: those matching, and where the next page starts (`None` at the end).
#[derive(Debug, Clone, PartialEq)]
pub struct MemberPage {
    pub members: Vec<Member>,
    pub next: Option<UserId>,
}

/// What the member list asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberQuery {
    /// Matched without case within the `userName`, the display name and the user id.
    pub search: Option<String>,
    pub after: Option<UserId>,
    pub limit: usize,
}

impl Administration {
    /// A page of the organisation's members by user id, those matching `query.search` only.
    /// A search reads at most [`SEARCH_BUDGET`] members a call, so a page may hold fewer
    /// than `limit` and still have a `next`.
    pub async fn members(
        &self, admin: &Admin, query: &MemberQuery,
    ) -> Result<MemberPage, CoreError> {
        let needle = query
            .search
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let needle = needle.map(user_name_key);
        let mut found = Vec::new();
        let mut after = query.after.clone();
        let mut read = 0;
        while found.len() < query.limit && read < SEARCH_BUDGET {
            let want = match needle {
                None => query.limit - found.len(),
                Some(_) => SEARCH_BATCH,
            };
            let batch = self
                .stores
                .directory
                .list_members_after(&admin.org, after.as_ref(), want)
                .await?;
            let exhausted = batch.len() < want;
            read += batch.len();
            for member in batch {
                after = Some(member.user.clone());
                if needle.as_deref().is_none_or(|n| matches(&member, n)) {
                    found.push(member);
                    if found.len() == query.limit {
                        break;
                    }
                }
            }
            if exhausted && found.len() < query.limit {
                return Ok(MemberPage {
                    members: found,
                    next: None,
                });
            }
        }
        Ok(MemberPage {
            members: found,
            next: after,
        })
    }

    /// Gives `user` `role`; the same role changes nothing and writes no audit entry.
    /// Errors: `NotFound`, `LastAdmin` (demoting the only admin).
    pub async fn set_role(
        &self, admin: &Admin, user: &UserId, role: Role,
    ) -> Result<Member, CoreError> {
        for _ in 0..ATTEMPTS {
            let current = self.member(admin, user).await?;
            if current.role == role {
                return Ok(current);
            }
            let mut next = current.clone();
            next.role = role;
            next.version += 1;
            next.updated_at = self.now().max(current.updated_at);
            let audit = admin
                .audit_member(self.now(), AuditAction::MemberRoleChanged, &current)
                .changed(Some(current.role.as_str()), role.as_str());
            let written = match current.role {
                Role::Admin => {
                    let keeper = self.keeper(admin, user).await?;
                    let store = &self.stores.directory;
                    store
                        .update_member_keeping(&current, &next, &audit, &keeper)
                        .await
                }
                Role::Viewer => {
                    self.stores
                        .directory
                        .update_member(&current, &next, &audit)
                        .await
                }
            };
            match written {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict | StoreError::Gone) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("the member stayed contended"))
    }

    /// Sets `user`'s own monthly allowance (`None`: the organisation's for every member). It
    /// applies from their next question. Idempotent: the same allowance again writes nothing.
    /// Errors: `NotFound`.
    pub async fn set_member_caps(
        &self, admin: &Admin, user: &UserId, caps: Option<MemberCaps>,
    ) -> Result<Member, CoreError> {
        for _ in 0..ATTEMPTS {
            let current = self.member(admin, user).await?;
            if current.caps == caps {
                return Ok(current);
            }
            let mut next = current.clone();
            next.caps = caps;
            next.version += 1;
            next.updated_at = self.now().max(current.updated_at);
            let text = |caps: Option<MemberCaps>| {
                caps.map_or("the organisation's".to_owned(), |c| settings::caps_text(&c))
            };
            let audit = admin
                .audit_member(self.now(), AuditAction::MemberCapsChanged, &current)
                .changed(Some(&text(current.caps)), &text(caps));
            let written = self.stores.directory.update_member(&current, &next, &audit);
            match written.await {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict | StoreError::Gone) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("the member stayed contended"))
    }

    /// Another admin of the organisation than `user`, as stored now. Errors: `LastAdmin`.
    async fn keeper(&self, admin: &Admin, user: &UserId) -> Result<Member, CoreError> {
        let members = self.stores.directory.list_members(&admin.org).await?;
        members
            .into_iter()
            .find(|m| m.role == Role::Admin && m.user != *user)
            .ok_or(CoreError::LastAdmin)
    }

    /// Removes `user` with their profile, credentials, OAuth grants and agent memory in one
    /// transaction, as SCIM deprovisioning does: their cookies for the organisation stop
    /// working at once. Then revokes the grants at their servers (best effort) and cancels
    /// their turns in flight and tells the workflow; returns how many. A failure
    /// to cancel is logged, not returned: the member is gone either way, and each run sees
    /// the removal at its next step. Errors: `NotFound`, `LastAdmin`.
    pub async fn remove_member(&self, admin: &Admin, user: &UserId) -> Result<usize, CoreError> {
        let grants = match &self.vault {
            Some(vault) => {
                vault
                    .grants_of(self.stores.directory.as_ref(), &admin.org, user)
                    .await
            }
            None => Vec::new(),
        };
        let mut removed = false;
        for _ in 0..ATTEMPTS {
            let current = self.member(admin, user).await?;
            let audit = admin.audit_member(self.now(), AuditAction::MemberRemoved, &current);
            let written = match current.role {
                Role::Admin => {
                    let keeper = self.keeper(admin, user).await?;
                    let store = &self.stores.directory;
                    store.remove_member_keeping(&current, &audit, &keeper).await
                }
                Role::Viewer => {
                    self.stores
                        .directory
                        .remove_member(&admin.org, user, &audit)
                        .await
                }
            };
            match written {
                Ok(true) => {
                    removed = true;
                    break;
                }
                Ok(false) => return Err(CoreError::NotFound("member")),
                Err(StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        if !removed {
            return Err(CoreError::internal("the member stayed contended"));
        }
        if let Some(vault) = &self.vault {
            vault.revoke_all(grants).await;
        }
        let store = self.stores.sessions.as_ref();
        match cancel_member_turns(store, self.clock.as_ref(), user, &admin.org).await {
            Ok(cancelled) => {
                if let Some(workflow) = &self.workflow {
                    for (key, run) in &cancelled {
                        workflow.cancelled(key, run).await;
                    }
                }
                Ok(cancelled.len())
            }
            Err(e) => {
                tracing::error!(error = %Chain(&e), "could not cancel a removed member's turns");
                Ok(0)
            }
        }
    }

    /// Adds `user` as a member with `role`, or gives an existing member `role`.
    /// Errors: `NotFound` (organisation), `LastAdmin`.
    pub async fn add_member(
        &self, admin: &Admin, user: &UserId, role: Role,
    ) -> Result<Member, CoreError> {
        self.org(admin).await?;
        for _ in 0..ATTEMPTS {
            if self
                .stores
                .directory
                .get_member(&admin.org, user)
                .await?
                .is_some()
            {
                match self.set_role(admin, user, role).await {
                    Err(CoreError::NotFound("member")) => continue,
                    other => return other,
                }
            }
            let member = Member::new(admin.org.clone(), user.clone(), role, self.now());
            let audit = admin
                .audit_member(self.now(), AuditAction::MemberAdded, &member)
                .became(role.as_str());
            match self.stores.directory.create_member(&member, &audit).await {
                Ok(()) => return Ok(member),
                Err(StoreError::AlreadyExists | StoreError::Conflict) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("the member stayed contended"))
    }

    /// Adds a new member named `user_name` (the `userName` single sign-on matches, without
    /// case, against the provider's claim) with `role`: how an organisation without SCIM lets
    /// someone in. Errors: `InvalidInput` (empty or too long), `Conflict` (`user_name_taken`:
    /// another member has the name), `NotFound` (organisation).
    pub async fn invite_member(
        &self, admin: &Admin, user_name: &str, role: Role,
    ) -> Result<Member, CoreError> {
        let user_name = valid_user_name(user_name)?;
        self.org(admin).await?;
        let mut member = Member::new(admin.org.clone(), UserId::generate(), role, self.now());
        member.profile = Some(Profile {
            user_name: user_name.to_owned(),
            external_id: None,
            attributes: Default::default(),
        });
        let audit = admin
            .audit_member(self.now(), AuditAction::MemberAdded, &member)
            .became(role.as_str());
        match self.stores.directory.create_member(&member, &audit).await {
            Ok(()) => Ok(member),
            Err(StoreError::AlreadyExists) => Err(CoreError::conflict(
                "user_name_taken",
                format!("another member has the userName {user_name}"),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Gives a member the `userName` that single sign-on matches (without case) against the
    /// provider's claim, keeping the rest of a SCIM profile. Errors: `NotFound`,
    /// `InvalidInput` (empty, too long, or another member's).
    pub async fn name_member(
        &self, admin: &Admin, user: &UserId, user_name: &str,
    ) -> Result<Member, CoreError> {
        let user_name = valid_user_name(user_name)?;
        for _ in 0..ATTEMPTS {
            let current = self.member(admin, user).await?;
            let mut next = current.clone();
            let profile = next.profile.get_or_insert_with(|| Profile {
                user_name: String::new(),
                external_id: None,
                attributes: Default::default(),
            });
            profile.user_name = user_name.to_owned();
            next.version += 1;
            next.updated_at = self.now().max(current.updated_at);
            let audit = admin
                .audit_member(self.now(), AuditAction::UserUpdated, &next)
                .changed(current.user_name(), user_name);
            match self
                .stores
                .directory
                .update_member(&current, &next, &audit)
                .await
            {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict | StoreError::Gone) => continue,
                Err(StoreError::AlreadyExists) => {
                    return Err(CoreError::invalid(
                        "user_name_taken",
                        format!("another member has the userName {user_name}"),
                    ));
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("the member stayed contended"))
    }
}

/// `user_name` trimmed. Errors: `InvalidInput` when empty, longer than
/// [`USER_NAME_MAX_CHARS`] or holding control characters.
fn valid_user_name(user_name: &str) -> Result<&str, CoreError> {
    let user_name = user_name.trim();
    let length = user_name.chars().count();
    if length == 0 || length > USER_NAME_MAX_CHARS || user_name.chars().any(char::is_control) {
        return Err(CoreError::invalid(
            "invalid_field",
            format!(
                "the userName must be 1 to {USER_NAME_MAX_CHARS} characters without control characters"
            ),
        ));
    }
    Ok(user_name)
}

/// Whether `member`'s `userName`, display name or user id holds `needle` (lowercased).
fn matches(member: &Member, needle: &str) -> bool {
    let profile = member.profile.as_ref();
    let names = [
        profile.map(|p| p.user_name.as_str()),
        profile.and_then(Profile::display_name),
        Some(member.user.as_str()),
    ];
    names
        .into_iter()
        .flatten()
        .any(|name| user_name_key(name).contains(needle))
}
