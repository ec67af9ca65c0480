//! [`SessionStore`] on DynamoDB: a session's record and its events in one partition, listed
//! through GSI1.

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{AttributeValue, TransactWriteItem};
use knowledge_core::clock::Timestamp;
use knowledge_core::domain::{
    Draft, Event, FIND_SCAN, FoundSessions, Session, SessionSummary, TitleQuery,
};
use knowledge_core::ids::{OrgId, RunId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{Charge, Gate, StoreError, StoreResult};

use crate::codec::*;
use crate::gate::Gated;
use crate::transact::TransactError;
use crate::{DynamoStore, keys};
use knowledge_core::ports::SessionStore;

/// GSI1 entries a search reads per Query, and the Queries it makes at most: together
/// [`FIND_SCAN`] entries (of about 150 bytes each, so a page stays far under 1 MB).
const FIND_PAGE: usize = 2_000;
const FIND_PAGES: usize = FIND_SCAN / FIND_PAGE;

/// A GSI1 entry as a session summary.
fn summary(item: &Item) -> StoreResult<SessionSummary> {
    let listing = get_s(item, keys::GSI1SK)?;
    let (listing, asks) = match listing.strip_suffix(keys::ASKS) {
        Some(rest) => (rest, true),
        None => (listing, false),
    };
    let id = listing
        .rsplit('#')
        .next()
        .and_then(|id| SessionId::parse(id).ok())
        .ok_or_else(|| corrupt(keys::GSI1SK))?;
    Ok(SessionSummary {
        id,
        title: get_s(item, "title")?.to_owned(),
        updated_at: Timestamp(get_n(item, "updatedAt")?),
        awaits_member: asks,
    })
}

/// Event keys a delete reads per page: four batches, so memory stays bounded however long the
/// log is.
const DELETE_PAGE: i32 = 100;

impl DynamoStore {
    /// A commit of the session record alone (a stamp, the end of a run, a delete's mark): one
    /// conditional `PutItem`, 1 WRU, instead of a one-item transaction at 2. Errors as
    /// [`SessionStore::commit_session`]: the stored record comes back when only its version
    /// moved (`Conflict`), none when it is gone (`Gone`); a transaction in flight on the item
    /// is `Conflict` too.
    async fn put_session(&self, session: &Session, expected_version: u64) -> StoreResult<()> {
        let put = built(
            self.versioned_put(session_item(session)?, expected_version)
                .build(),
        )?;
        match self.put_item(put).send().await {
            Ok(_) => Ok(()),
            Err(e) => match e.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(c)) => {
                    match c.item().is_some_and(|item| !item.is_empty()) {
                        true => Err(StoreError::Conflict),
                        false => Err(StoreError::Gone),
                    }
                }
                Some(PutItemError::TransactionConflictException(_)) => Err(StoreError::Conflict),
                _ => Err(backend(e)),
            },
        }
    }

    /// Appends `gate`'s items to a transaction on `key`'s session; returns where they start.
    fn add_gate(
        &self, writes: &mut Vec<TransactWriteItem>, key: &SessionKey, gate: Option<&Gate<'_>>,
    ) -> StoreResult<Option<usize>> {
        let Some(gate) = gate else { return Ok(None) };
        let at = writes.len();
        writes.extend(self.gate_items(&key.org, &key.user, gate)?);
        Ok(Some(at))
    }
}

#[async_trait]
impl SessionStore for DynamoStore {
    async fn create_session(
        &self, session: &Session, events: &[Event], gate: Option<&Gate<'_>>,
    ) -> StoreResult<()> {
        let mut writes = vec![self.put_new(session_item(session)?)?];
        writes.extend(self.event_puts(&session.key, events)?);
        let gate_at = self.add_gate(&mut writes, &session.key, gate)?;
        match self.transact_gated(writes, gate_at).await {
            Ok(()) => Ok(()),
            Err(Gated::Refused(e)) => Err(e),
            Err(Gated::Transact(TransactError::FirstCondition { .. })) => {
                Err(StoreError::AlreadyExists)
            }
            Err(Gated::Transact(TransactError::Contended)) => Err(StoreError::Conflict),
            Err(Gated::Transact(TransactError::OtherCondition(e) | TransactError::Backend(e))) => {
                Err(e)
            }
        }
    }

    async fn get_session(&self, key: &SessionKey) -> StoreResult<Option<Session>> {
        self.get(keys::session(key))
            .await?
            .map(|item| session_from(key, &item))
            .transpose()
    }

    async fn commit_session(
        &self, session: &Session, expected_version: u64, events: &[Event], charge: Option<&Charge>,
        gate: Option<&Gate<'_>>,
    ) -> StoreResult<()> {
        if events.is_empty() && charge.is_none() && gate.is_none() {
            return self.put_session(session, expected_version).await;
        }
        let mut writes = vec![self.put_versioned(session_item(session)?, expected_version)?];
        writes.extend(self.event_puts(&session.key, events)?);
        if let Some(charge) = charge {
            writes.extend(self.charge_updates(&session.key, charge)?);
        }
        if charge.is_some() && gate.is_some_and(|g| g.query.is_some()) {
            return Err(StoreError::backend(
                "a commit cannot both charge and count a query: a usage item once per transaction",
            ));
        }
        let gate_at = self.add_gate(&mut writes, &session.key, gate)?;
        match self.transact_gated(writes, gate_at).await {
            Ok(()) => Ok(()),
            Err(Gated::Refused(e)) => Err(e),
            // The old record comes back when there was one: then only its version moved.
            Err(Gated::Transact(TransactError::FirstCondition { stored: true })) => {
                Err(StoreError::Conflict)
            }
            Err(Gated::Transact(TransactError::FirstCondition { stored: false })) => {
                Err(StoreError::Gone)
            }
            // A concurrent transaction on one of the items, or (only through a bug) an event
            // number taken: re-read and try again.
            Err(Gated::Transact(TransactError::Contended | TransactError::OtherCondition(_))) => {
                Err(StoreError::Conflict)
            }
            Err(Gated::Transact(TransactError::Backend(e))) => Err(e),
        }
    }

    async fn rewrite_events(
        &self, session: &Session, expected_version: u64, rewritten: &[Event],
    ) -> StoreResult<()> {
        let mut writes = vec![self.put_versioned(session_item(session)?, expected_version)?];
        for e in rewritten {
            writes.push(self.put_existing(event_item(&session.key, e)?)?);
        }
        match self.transact(writes).await {
            Ok(()) => Ok(()),
            Err(TransactError::FirstCondition { stored: true }) => Err(StoreError::Conflict),
            Err(TransactError::FirstCondition { stored: false }) => Err(StoreError::Gone),
            Err(TransactError::Contended | TransactError::OtherCondition(_)) => {
                Err(StoreError::Conflict)
            }
            Err(TransactError::Backend(e)) => Err(e),
        }
    }

    async fn list_events(
        &self, key: &SessionKey, after: u64, limit: usize,
    ) -> StoreResult<Vec<Event>> {
        let out = self
            .events_query(key, after)
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .send()
            .await
            .map_err(backend)?;
        out.items().iter().map(event_from).collect()
    }

    async fn list_sessions(
        &self, user: &UserId, org: &OrgId, limit: usize,
    ) -> StoreResult<Vec<SessionSummary>> {
        let out = self
            .index_query(keys::user_org(user, org), limit)
            .scan_index_forward(false)
            .send()
            .await
            .map_err(backend)?;
        out.items().iter().map(summary).collect()
    }

    async fn put_draft(&self, key: &SessionKey, run: &RunId, draft: &Draft) -> StoreResult<bool> {
        // One UpdateItem of the session's item, its version untouched: the next commit (a Put
        // of the whole item) removes it. 1 WRU per KB of the item, draft included.
        let written = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key_item(keys::session(key))))
            .update_expression("SET #draft = :draft")
            .condition_expression("#run = :run AND #deleting = :no")
            .expression_attribute_names("#draft", DRAFT)
            .expression_attribute_names("#run", "runId")
            .expression_attribute_names("#deleting", "deleting")
            .expression_attribute_values(":draft", s(to_json(draft)?))
            .expression_attribute_values(":run", s(run.as_str()))
            .expression_attribute_values(":no", AttributeValue::Bool(false))
            .send()
            .await;
        match written {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                Some(UpdateItemError::ConditionalCheckFailedException(_)) => Ok(false),
                // A commit's transaction on the item: this draft is not written, the next may be.
                Some(UpdateItemError::TransactionConflictException(_)) => Err(StoreError::Conflict),
                _ => Err(backend(e)),
            },
        }
    }

    async fn find_sessions(
        &self, user: &UserId, org: &OrgId, query: &TitleQuery, limit: usize,
    ) -> StoreResult<FoundSessions> {
        self.find_in_pages(user, org, query, limit, FIND_PAGE, FIND_PAGES)
            .await
    }

    async fn delete_session(&self, key: &SessionKey) -> StoreResult<bool> {
        // Events first, page by page; the session item last, so that a delete cut short
        // leaves a session that is still `deleting` and can be deleted again.
        let mut start = None;
        loop {
            let out = self
                .events_query(key, 0)
                .projection_expression("#pk, #sk")
                .limit(DELETE_PAGE)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            let page: Vec<Item> = out.items.unwrap_or_default();
            self.delete_all(page).await?;
            match out.last_evaluated_key {
                Some(k) => start = Some(k),
                None => break,
            }
        }
        Ok(self.take(keys::session(key)).await?.is_some())
    }

    async fn deleting_sessions(&self, limit: usize) -> StoreResult<Vec<SessionKey>> {
        let out = self
            .index_query(keys::DELETING.to_owned(), limit)
            .send()
            .await
            .map_err(backend)?;
        // An entry that does not name a session is skipped (and logged): it must not keep
        // every other unfinished delete from being finished.
        Ok(out
            .items()
            .iter()
            .filter_map(|item| {
                let key = get_s(item, keys::GSI1SK)
                    .ok()
                    .and_then(keys::session_key_of);
                if key.is_none() {
                    tracing::warn!("an entry of the DELETING index does not name a session");
                }
                key
            })
            .collect())
    }

    /// One query of GSI2 per shard, each for entries below `before`, until `limit` are found.
    async fn stale_runs(&self, before: Timestamp, limit: usize) -> StoreResult<Vec<SessionKey>> {
        let mut found = Vec::new();
        for shard in 0..keys::STALE_SHARDS {
            if found.len() >= limit {
                break;
            }
            let out = self
                .stale_query(shard, before, limit - found.len())
                .send()
                .await
                .map_err(backend)?;
            found.extend(out.items().iter().filter_map(|item| {
                let key = get_s(item, keys::GSI2SK).ok().and_then(keys::stale_key_of);
                if key.is_none() {
                    tracing::warn!("an entry of GSI2 does not name a session");
                }
                key
            }));
        }
        Ok(found)
    }
}

impl DynamoStore {
    /// [`SessionStore::find_sessions`] reading at most `pages` Queries of `page` GSI1 entries,
    /// newest first, and matching here (Unicode case folding): the read capacity is the same as
    /// a filter expression's would be.
    pub(crate) async fn find_in_pages(
        &self, user: &UserId, org: &OrgId, query: &TitleQuery, limit: usize, page: usize,
        pages: usize,
    ) -> StoreResult<FoundSessions> {
        let mut sessions = vec![];
        let mut start = None;
        // Complete unless the pages ran out with entries left beyond them.
        let mut complete = false;
        for _ in 0..pages {
            let out = self
                .index_query(keys::user_org(user, org), page)
                .scan_index_forward(false)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(backend)?;
            for item in out.items() {
                let found = summary(item)?;
                if query.matches(&found.title) {
                    sessions.push(found);
                }
            }
            start = out.last_evaluated_key;
            if start.is_none() || sessions.len() >= limit {
                complete = true;
                break;
            }
        }
        sessions.truncate(limit);
        Ok(FoundSessions { sessions, complete })
    }
}
