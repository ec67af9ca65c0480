//! [`BatchStore`] on DynamoDB: the records a request reads before it writes, in one
//! `BatchGetItem`. A gate's items in a write are the `gate` module's.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::KeysAndAttributes;
use knowledge_core::domain::{MEMORY_ITEM, MemberDataKind};
use knowledge_core::ports::{BatchStore, Reads, SessionStore, Snapshot, StoreResult};

use crate::codec::*;
use crate::limits::rate_window_from;
use crate::orgs::org_from;
use crate::transact::next_round;
use crate::{DynamoStore, keys};

const AGENT_MEMORY: &str = MemberDataKind::AgentMemory.as_str();

#[async_trait]
impl BatchStore for DynamoStore {
    async fn read_batch(&self, reads: &Reads<'_>) -> StoreResult<Snapshot> {
        let member = keys::member(reads.org, reads.user);
        let org = reads.org_record.then(|| keys::org(reads.org));
        let usage = reads.usage_month.map(|m| keys::usage(reads.org, m));
        let member_usage =
            (reads.usage_month).map(|m| keys::member_usage(reads.org, reads.user, m));
        let window = reads.rate_window.map(keys::rate_window);
        let session_key = reads.session_key();
        let session = session_key.as_ref().map(keys::session);
        let memory = reads
            .memory
            .then(|| keys::member_data(reads.org, reads.user, AGENT_MEMORY, MEMORY_ITEM));
        let wanted: Vec<(String, String)> = [Some(member.clone()), org.clone()]
            .into_iter()
            .chain([
                usage.clone(),
                member_usage.clone(),
                window.clone(),
                session.clone(),
                memory.clone(),
            ])
            .flatten()
            .collect();
        let mut found = self.batch_get(wanted).await?;
        let mut take = |key: Option<(String, String)>| key.and_then(|k| found.remove(&k));
        let mut snapshot = Snapshot {
            member: take(Some(member)).map(|i| member_from(&i)).transpose()?,
            org: take(org).map(|i| org_from(&i)).transpose()?,
            usage: take(usage)
                .map(|i| usage_from(&i))
                .transpose()?
                .unwrap_or_default(),
            member_usage: take(member_usage)
                .map(|i| usage_from(&i))
                .transpose()?
                .unwrap_or_default(),
            rate_window: take(window)
                .map(|i| rate_window_from(&i))
                .transpose()?
                .unwrap_or_default(),
            memory: take(memory)
                .map(|i| get_s(&i, "value").map(str::to_owned))
                .transpose()?,
            session: None,
            draft: None,
            events: Vec::new(),
        };
        // The answer in progress is an attribute of the session's item.
        if let (Some(item), Some(key)) = (take(session), &session_key) {
            snapshot.session = Some(session_from(key, &item)?);
            snapshot.draft = draft_from(&item)?;
        }
        // The events after the session, and only for a member's session that exists.
        if let (Some(page), Some(session), Some(_)) =
            (reads.events, &snapshot.session, &snapshot.member)
        {
            snapshot.events = self
                .list_events(&session.key, page.after, page.limit)
                .await?;
        }
        Ok(snapshot)
    }
}

impl DynamoStore {
    /// The items stored under `wanted` (at most 100 distinct keys), read strongly consistent,
    /// by key. Keys left unprocessed are asked for again with backoff.
    pub(crate) async fn batch_get(
        &self, wanted: Vec<(String, String)>,
    ) -> StoreResult<HashMap<(String, String), Item>> {
        let mut found = HashMap::with_capacity(wanted.len());
        let keys = wanted.into_iter().map(key_item).collect::<Vec<_>>();
        let mut request = Some(built(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .build(),
        )?);
        let mut round = 0;
        while let Some(ask) = request.take() {
            next_round(round, || "keys of a BatchGetItem".to_owned()).await?;
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, ask)
                .send()
                .await
                .map_err(backend)?;
            for item in out
                .responses
                .and_then(|mut r| r.remove(&self.table))
                .unwrap_or_default()
            {
                let key = (
                    get_s(&item, keys::PK)?.to_owned(),
                    get_s(&item, keys::SK)?.to_owned(),
                );
                found.insert(key, item);
            }
            request = out
                .unprocessed_keys
                .and_then(|mut u| u.remove(&self.table))
                .filter(|k| !k.keys().is_empty());
            round += 1;
        }
        Ok(found)
    }
}
