//! Collections and documents to items and back, and the update of the organisation's storage.

use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{Collection, Document, DocumentStatus};
use knowledge_core::ids::{CollectionId, OrgId, UserId};
use knowledge_core::ports::StoreResult;

use crate::codec::*;
use crate::{DynamoStore, keys};

/// The attribute that marks a collection being deleted.
pub(super) const DELETING: &str = "deleting";
/// The storage counter's attribute: bytes of originals stored.
const USED: &str = "used";

pub(super) fn deleting(item: &Item) -> bool {
    item.contains_key(DELETING)
}

pub(super) fn collection_item(c: &Collection) -> StoreResult<Item> {
    let mut item = key_item(keys::collection(&c.org, &c.id));
    item.insert("name".into(), s(&c.name));
    item.insert("description".into(), s(&c.description));
    item.insert("access".into(), s(to_json(&c.access)?));
    item.insert("source".into(), s(c.source.as_str()));
    item.insert("version".into(), n(c.version));
    item.insert("createdAt".into(), n(c.created_at.millis()));
    item.insert("updatedAt".into(), n(c.updated_at.millis()));
    Ok(item)
}

pub(super) fn collection_from(org: &OrgId, item: &Item) -> StoreResult<Collection> {
    let sk = get_s(item, keys::SK)?;
    let id = sk
        .strip_prefix(keys::COLLECTION)
        .and_then(|id| CollectionId::parse(id).ok())
        .ok_or_else(|| corrupt(keys::SK))?;
    Ok(Collection {
        org: org.clone(),
        id,
        name: get_s(item, "name")?.to_owned(),
        description: get_s(item, "description")?.to_owned(),
        access: get_json(item, "access")?,
        source: parsed(item, "source")?,
        version: get_n(item, "version")?,
        created_at: Timestamp(get_n(item, "createdAt")?),
        updated_at: Timestamp(get_n(item, "updatedAt")?),
    })
}

/// A document's item; in GSI2 only while it is `queued` (the workers' queue) or `uploading`
/// (the sweep's), so that a write that moves it on removes it from there.
pub(super) fn document_item(d: &Document) -> Item {
    let mut item = key_item(keys::document(&d.org, &d.collection, &d.id));
    item.insert("name".into(), s(&d.name));
    item.insert("format".into(), s(d.format.as_str()));
    item.insert("bytes".into(), n(d.bytes));
    item.insert("sha256".into(), s(&d.sha256));
    item.insert("status".into(), s(d.status.as_str()));
    if let Some(reason) = &d.reason {
        item.insert("reason".into(), s(reason));
    }
    item.insert("generation".into(), n(d.generation));
    item.insert("passages".into(), n(d.passages));
    item.insert("attempts".into(), n(d.attempts));
    if let Some(at) = d.lease_until {
        item.insert("leaseUntil".into(), n(at.millis()));
    }
    item.insert("version".into(), n(d.version));
    if let Some(by) = &d.by {
        item.insert("by".into(), s(by.as_str()));
    }
    item.insert("createdAt".into(), n(d.created_at.millis()));
    item.insert("updatedAt".into(), n(d.updated_at.millis()));
    let listing = match d.status {
        DocumentStatus::Queued => Some(keys::queued_listing(&d.id, d.updated_at)),
        DocumentStatus::Uploading => Some(keys::uploading_listing(&d.id, d.updated_at)),
        DocumentStatus::Indexed | DocumentStatus::Failed => None,
    };
    if let Some((gpk, gsk)) = listing {
        item.insert(keys::GSI2PK.into(), s(gpk));
        item.insert(keys::GSI2SK.into(), s(gsk));
    }
    item
}

pub(super) fn document_from(item: &Item) -> StoreResult<Document> {
    let (org, collection, id) = keys::document_of(get_s(item, keys::PK)?, get_s(item, keys::SK)?)
        .ok_or_else(|| corrupt(keys::PK))?;
    let optional_s = |name: &str| -> StoreResult<Option<&str>> {
        item.contains_key(name)
            .then(|| get_s(item, name))
            .transpose()
    };
    Ok(Document {
        org,
        collection,
        id,
        name: get_s(item, "name")?.to_owned(),
        format: parsed(item, "format")?,
        bytes: get_n(item, "bytes")?,
        sha256: get_s(item, "sha256")?.to_owned(),
        status: parsed(item, "status")?,
        reason: optional_s("reason")?.map(str::to_owned),
        generation: get_n(item, "generation")?,
        passages: get_n(item, "passages")?,
        attempts: get_n(item, "attempts")?,
        lease_until: match item.get("leaseUntil") {
            None => None,
            Some(_) => Some(Timestamp(get_n(item, "leaseUntil")?)),
        },
        version: get_n(item, "version")?,
        by: match optional_s("by")? {
            None => None,
            Some(by) => Some(UserId::parse(by).map_err(|_| corrupt("by"))?),
        },
        created_at: Timestamp(get_n(item, "createdAt")?),
        updated_at: Timestamp(get_n(item, "updatedAt")?),
    })
}

fn parsed<T: std::str::FromStr>(item: &Item, name: &str) -> StoreResult<T> {
    get_s(item, name)?.parse().map_err(|_| corrupt(name))
}

/// The bytes the storage counter holds in `item` (none: 0).
pub(super) fn used_from(item: Option<&Item>) -> StoreResult<u64> {
    item.map_or(Ok(0), |item| get_n_or_zero(item, USED))
}

impl DynamoStore {
    /// The transaction item that moves `org`'s storage by `delta` bytes. Growth is conditional
    /// on the result staying within `allowance` (`used <= allowance - delta`, which no stored
    /// count meets when the delta alone passes it), so that of concurrent uploads only those
    /// that fit together commit; a release is unconditional.
    pub(super) fn storage_move(
        &self, org: &OrgId, delta: i128, allowance: u64,
    ) -> StoreResult<TransactWriteItem> {
        let mut update = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::storage(org))))
            .update_expression("ADD #used :delta")
            .expression_attribute_names("#used", USED)
            .expression_attribute_values(":delta", n(delta));
        if delta > 0 {
            let room = i128::from(allowance) - delta;
            let condition = match room {
                // A missing counter is 0 bytes, which fits unless the delta alone does not.
                0.. => "attribute_not_exists(#used) OR #used <= :room",
                _ => "#used <= :room",
            };
            update = update
                .condition_expression(condition)
                .expression_attribute_values(":room", n(room));
        }
        Ok(TransactWriteItem::builder()
            .update(built(update.build())?)
            .build())
    }
}
