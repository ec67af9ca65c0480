//! The organisation's documents as use cases: collections and their access (`collections`),
//! uploads, replacements and deletions (`uploads`), the durable indexing job (`indexing`), and
//! search answered in two steps, the index's candidates checked against the store
//! (`search`), and the agent's tool over that search (`tool`). The rules are in
//! `docs/design/documents.md`.

mod collections;
mod folder;
mod indexing;
mod rebuild;
mod search;
mod sweep;
mod tool;
mod turns;
mod uploads;

use std::sync::Arc;

use crate::CoreError;
use crate::clock::Clock;
use crate::domain::{Collection, Plan, Role};
use crate::ids::GroupId;
use crate::ports::{DocumentStore, GroupStore, OrgStore, Originals, Parser, PassageIndex};
use crate::service::Principal;

pub use collections::{CollectionChange, NewCollection};
pub use folder::{FolderFile, Synced};
pub use indexing::{IndexAttempt, IndexOutcome, Workers};
pub use search::{Original, SearchHit, SearchRequest};
pub use sweep::{SweptUploads, UPLOAD_STALE_MS, UPLOAD_SWEEP_BATCH};
pub use tool::{
    DEFAULT_LIMIT as SEARCH_TOOL_DEFAULT_LIMIT, MAX_LIMIT as SEARCH_TOOL_MAX_LIMIT,
    TOOL as SEARCH_TOOL, WithDocuments, citation,
};
pub use uploads::{Arrival, Upload, UploadIntent};

/// The bounds on what an organisation stores; operator settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentLimits {
    /// Bytes of one file at most.
    pub max_file_bytes: u64,
    /// Bytes of originals an organisation may store, by plan.
    pub free_bytes: u64,
    pub pro_bytes: u64,
    pub business_bytes: u64,
}

impl DocumentLimits {
    /// 25 MiB a file; 100 MiB, 10 GiB and 100 GiB an organisation by plan.
    pub const DEFAULT: Self = Self {
        max_file_bytes: 25 << 20,
        free_bytes: 100 << 20,
        pro_bytes: 10 << 30,
        business_bytes: 100 << 30,
    };

    /// What an organisation on `plan` may store.
    pub fn allowance(&self, plan: Plan) -> u64 {
        match plan {
            Plan::Free => self.free_bytes,
            Plan::Pro => self.pro_bytes,
            Plan::Business => self.business_bytes,
        }
    }
}

impl Default for DocumentLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// The store roles the documents' use cases read and write.
#[derive(Clone)]
pub struct DocumentStores {
    pub documents: Arc<dyn DocumentStore>,
    /// A member's groups, for access; the groups a collection is opened to.
    pub groups: Arc<dyn GroupStore>,
    /// The organisation's plan, for its storage allowance.
    pub orgs: Arc<dyn OrgStore>,
}

/// The documents' use cases.
#[derive(Clone)]
pub struct Documents {
    stores: DocumentStores,
    originals: Arc<dyn Originals>,
    index: Arc<dyn PassageIndex>,
    clock: Arc<dyn Clock>,
    limits: DocumentLimits,
    /// Told of every document queued, so that idle workers start at once.
    queued: Arc<tokio::sync::Notify>,
}

impl Documents {
    pub fn new(
        stores: DocumentStores, originals: Arc<dyn Originals>, index: Arc<dyn PassageIndex>,
        clock: Arc<dyn Clock>, limits: DocumentLimits,
    ) -> Self {
        Self {
            stores,
            originals,
            index,
            clock,
            limits,
            queued: Arc::default(),
        }
    }

    pub fn limits(&self) -> DocumentLimits {
        self.limits
    }

    /// Workers that index the queued documents with `parser`.
    pub fn workers(&self, parser: Arc<dyn Parser>) -> Workers {
        Workers::new(self.clone(), parser)
    }

    /// The collections `reader` may open, by id: every one for an admin; for a member those
    /// open to everyone or to a group they are in now. Read at each call, never kept, so a
    /// member taken out of a group (or a group deleted) stops opening its collections at once.
    pub async fn openable(&self, reader: &Principal) -> Result<Vec<Collection>, CoreError> {
        let org = &reader.org;
        let collections = self.stores.documents.list_collections(org).await?;
        if reader.role == Role::Admin {
            return Ok(collections);
        }
        let groups = self.live_groups(reader).await?;
        Ok(collections
            .into_iter()
            .filter(|c| c.access.opens_to(&groups))
            .collect())
    }

    /// The groups `reader` is in that still exist: a deleted group's memberships may outlive
    /// it for a moment (DynamoDB removes them a page at a time), and count for nothing.
    async fn live_groups(&self, reader: &Principal) -> Result<Vec<GroupId>, CoreError> {
        let groups = &self.stores.groups;
        let mine = groups.member_groups(&reader.org, &reader.user).await?;
        if mine.is_empty() {
            return Ok(mine);
        }
        let existing = groups.list_groups(&reader.org).await?;
        Ok(mine
            .into_iter()
            .filter(|g| existing.iter().any(|e| e.id == *g))
            .collect())
    }
}
