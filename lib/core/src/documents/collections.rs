//! An admin's collections: list, create, change (name, description, who may open it) and
//! delete with every document, original and passage of it. Every change is audited.

use std::collections::BTreeSet;

use crate::CoreError;
use crate::admin::Admin;
use crate::domain::{
    Access, AuditAction, COLLECTIONS_PER_ORG, Collection, CollectionSource, DESCRIPTION_MAX_CHARS,
    DOCUMENT_NAME_MAX_CHARS, GROUPS_PER_COLLECTION, Storage,
};
use crate::ids::{CollectionId, GroupId, OrgId};
use crate::ports::StoreError;

use super::Documents;

/// A collection as an admin asks for it, before its checks.
#[derive(Debug, Clone)]
pub struct NewCollection {
    pub name: String,
    pub description: String,
    pub access: Access,
}

/// What an admin changes of a collection; a field left `None` stays.
#[derive(Debug, Clone, Default)]
pub struct CollectionChange {
    pub name: Option<String>,
    pub description: Option<String>,
    pub access: Option<Access>,
}

/// `name` trimmed. Errors: empty, too long, or not one line.
pub(super) fn checked_name(what: &str, name: &str) -> Result<String, CoreError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(CoreError::invalid(
            "empty_field",
            format!("{what} must not be empty"),
        ));
    }
    if name.chars().count() > DOCUMENT_NAME_MAX_CHARS {
        return Err(CoreError::invalid(
            "too_long",
            format!("{what} must be at most {DOCUMENT_NAME_MAX_CHARS} characters"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(CoreError::invalid(
            "invalid_field",
            format!("{what} must be one line of text"),
        ));
    }
    Ok(name.to_owned())
}

fn checked_description(description: &str) -> Result<String, CoreError> {
    let description = description.trim();
    if description.chars().count() > DESCRIPTION_MAX_CHARS {
        return Err(CoreError::invalid(
            "too_long",
            format!("description must be at most {DESCRIPTION_MAX_CHARS} characters"),
        ));
    }
    Ok(description.to_owned())
}

/// How an access reads in the audit log.
fn described(access: &Access) -> String {
    match access {
        Access::Everyone => "everyone".into(),
        Access::Groups(groups) if groups.is_empty() => "no one".into(),
        Access::Groups(groups) => format!("{} group(s)", groups.len()),
    }
}

impl Documents {
    /// Every collection of the organisation, by name.
    pub async fn collections(&self, admin: &Admin) -> Result<Vec<Collection>, CoreError> {
        let mut all = self.stores.documents.list_collections(&admin.org).await?;
        all.sort_by_key(|c| (c.name.to_lowercase(), c.id.clone()));
        Ok(all)
    }

    /// The organisation's storage of originals and its allowance.
    pub async fn storage(&self, org: &OrgId) -> Result<Storage, CoreError> {
        Ok(Storage {
            used_bytes: self.stores.documents.storage_used(org).await?,
            allowance_bytes: self.allowance(org).await?,
        })
    }

    pub(super) async fn allowance(&self, org: &OrgId) -> Result<u64, CoreError> {
        let org =
            (self.stores.orgs.get_org(org).await?).ok_or(CoreError::NotFound("organisation"))?;
        Ok(self.limits.allowance(org.plan))
    }

    /// The collection, which must exist in the admin's organisation. Errors: `NotFound`.
    pub async fn collection(
        &self, admin: &Admin, id: &CollectionId,
    ) -> Result<Collection, CoreError> {
        (self.stores.documents.get_collection(&admin.org, id).await?)
            .ok_or(CoreError::NotFound("collection"))
    }

    /// `access` if every group it names is one of the organisation's. Errors: 400
    /// `unknown_group`, `too_many_groups`.
    async fn checked_access(&self, org: &OrgId, access: Access) -> Result<Access, CoreError> {
        let Access::Groups(groups) = &access else {
            return Ok(access);
        };
        if groups.len() > GROUPS_PER_COLLECTION {
            return Err(CoreError::invalid(
                "too_many_groups",
                format!("a collection may be opened to at most {GROUPS_PER_COLLECTION} groups"),
            ));
        }
        let existing = self.stores.groups.list_groups(org).await?;
        let known: BTreeSet<&GroupId> = existing.iter().map(|g| &g.id).collect();
        if let Some(unknown) = groups.iter().find(|g| !known.contains(g)) {
            return Err(CoreError::invalid(
                "unknown_group",
                format!("{unknown} is not a group of the organisation"),
            ));
        }
        Ok(access)
    }

    /// Creates a collection. Errors: a bad name, description or access; 409
    /// `too_many_collections` past [`COLLECTIONS_PER_ORG`].
    pub async fn create_collection(
        &self, admin: &Admin, new: NewCollection,
    ) -> Result<Collection, CoreError> {
        self.create_collection_from(admin, new, CollectionSource::Upload)
            .await
    }

    /// [`Self::create_collection`] with its source: a folder's is made by the local service.
    pub async fn create_collection_from(
        &self, admin: &Admin, new: NewCollection, source: CollectionSource,
    ) -> Result<Collection, CoreError> {
        let name = checked_name("name", &new.name)?;
        let description = checked_description(&new.description)?;
        let access = self.checked_access(&admin.org, new.access).await?;
        let count = self
            .stores
            .documents
            .list_collections(&admin.org)
            .await?
            .len();
        if count >= COLLECTIONS_PER_ORG {
            return Err(CoreError::conflict(
                "too_many_collections",
                format!("an organisation may have at most {COLLECTIONS_PER_ORG} collections"),
            ));
        }
        let now = self.clock.now();
        let collection = Collection {
            org: admin.org.clone(),
            id: CollectionId::generate(),
            name,
            description,
            access,
            source,
            version: 1,
            created_at: now,
            updated_at: now,
        };
        let audit = admin
            .audit(now, AuditAction::CollectionCreated, collection.id.as_str())
            .target_named(Some(&collection.name))
            .became(&described(&collection.access));
        self.stores
            .documents
            .create_collection(&collection, &audit)
            .await?;
        Ok(collection)
    }

    /// Changes a collection's name, description or access; the same again changes nothing.
    /// Errors: as [`Self::create_collection`], and `NotFound`.
    pub async fn change_collection(
        &self, admin: &Admin, id: &CollectionId, change: CollectionChange,
    ) -> Result<Collection, CoreError> {
        let name = change
            .name
            .as_deref()
            .map(|n| checked_name("name", n))
            .transpose()?;
        let description = change
            .description
            .as_deref()
            .map(checked_description)
            .transpose()?;
        let access = match change.access {
            Some(access) => Some(self.checked_access(&admin.org, access).await?),
            None => None,
        };
        loop {
            let current = self.collection(admin, id).await?;
            let next = Collection {
                name: name.clone().unwrap_or_else(|| current.name.clone()),
                description: description
                    .clone()
                    .unwrap_or_else(|| current.description.clone()),
                access: access.clone().unwrap_or_else(|| current.access.clone()),
                version: current.version + 1,
                updated_at: self.clock.now(),
                ..current.clone()
            };
            let same = next.name == current.name
                && next.description == current.description
                && next.access == current.access;
            if same {
                return Ok(current);
            }
            let audit = admin
                .audit(next.updated_at, AuditAction::CollectionChanged, id.as_str())
                .target_named(Some(&next.name))
                .was(&described(&current.access))
                .became(&described(&next.access));
            match (self.stores.documents)
                .update_collection(&current, &next, &audit)
                .await
            {
                Ok(()) => return Ok(next),
                Err(StoreError::Conflict) => continue,
                Err(StoreError::Gone) => return Err(CoreError::NotFound("collection")),
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Deletes a collection: at once unsearchable (its record goes first), then every
    /// document's original and passages are removed. Errors: `NotFound`. A failure to remove
    /// an original or the passages is logged, not returned: the collection is gone, searches
    /// already skip what is left, and `knowledge documents sweep` removes it.
    pub async fn delete_collection(
        &self, admin: &Admin, id: &CollectionId,
    ) -> Result<(), CoreError> {
        let collection = self.collection(admin, id).await?;
        let audit = admin
            .audit(
                self.clock.now(),
                AuditAction::CollectionDeleted,
                id.as_str(),
            )
            .target_named(Some(&collection.name));
        let documents = (self.stores.documents)
            .delete_collection(&admin.org, id, &audit)
            .await?
            .ok_or(CoreError::NotFound("collection"))?;
        if let Err(e) = self.index.remove_collection(&admin.org, id).await {
            tracing::error!(error = ?e, collection = %id, "the deleted collection's passages stay until the sweep");
        }
        for document in &documents {
            if let Err(e) = self.originals.delete(&admin.org, &document.id).await {
                tracing::error!(error = ?e, document = %document.id, "a deleted document's original stays until the sweep");
            }
        }
        Ok(())
    }
}
