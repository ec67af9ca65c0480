//! [`GrantStore`] on SQLite: a member's grant is a `member_data` row of kind `oauth_grant`, the
//! organisation's the `org_grant` column of its integration's row.

use async_trait::async_trait;
use knowledge_core::domain::{AuditEntry, GrantOwner, MemberDataKind};
use knowledge_core::ids::OrgId;
use knowledge_core::ports::{GrantStore, StoreError, StoreResult};
use rusqlite::{OptionalExtension, params};

use crate::directory::{insert_audit, member_data_value, swap_member_data};
use crate::{SqliteStore, backend};

const KIND: &str = MemberDataKind::OAuthGrant.as_str();

#[async_trait]
impl GrantStore for SqliteStore {
    async fn get_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str,
    ) -> StoreResult<Option<String>> {
        let (o, owner, name) = (org.clone(), owner.clone(), integration.to_owned());
        self.read(move |c| match &owner {
            GrantOwner::Member(user) => member_data_value(c, &o, user, KIND, &name),
            GrantOwner::Organisation => c
                .query_row(
                    "SELECT org_grant FROM integrations WHERE org_id = ?1 AND name = ?2",
                    params![o.as_str(), name],
                    |r| r.get(0),
                )
                .optional()
                .map(Option::flatten),
        })
        .await
    }

    async fn swap_grant(
        &self, org: &OrgId, owner: &GrantOwner, integration: &str, previous: Option<&str>,
        next: Option<&str>, audit: Option<&AuditEntry>,
    ) -> StoreResult<()> {
        let (o, owner, name) = (org.clone(), owner.clone(), integration.to_owned());
        let (previous, next) = (previous.map(str::to_owned), next.map(str::to_owned));
        let audit = audit.cloned();
        self.write(move |tx| {
            match &owner {
                GrantOwner::Member(user) => {
                    let (previous, next) = (previous.as_deref(), next.as_deref());
                    swap_member_data(tx, &o, user, KIND, &name, previous, next)?;
                }
                GrantOwner::Organisation => {
                    let stored: Option<Option<String>> = tx
                        .query_row(
                            "SELECT org_grant FROM integrations WHERE org_id = ?1 AND name = ?2",
                            params![o.as_str(), name],
                            |r| r.get(0),
                        )
                        .optional()
                        .map_err(backend)?;
                    match stored {
                        None if previous.is_none() => return Err(StoreError::Gone),
                        Some(stored) if stored == previous => {}
                        _ => return Err(StoreError::Conflict),
                    }
                    tx.execute(
                        "UPDATE integrations SET org_grant = ?3 WHERE org_id = ?1 AND name = ?2",
                        params![o.as_str(), name, next],
                    )
                    .map_err(backend)?;
                }
            }
            match &audit {
                Some(a) => insert_audit(tx, a),
                None => Ok(()),
            }
        })
        .await
    }
}
