//! [`BatchStore`] in memory: several roles' records read under the one lock.

use async_trait::async_trait;

use super::TransientStore;
use crate::domain::{MEMORY_ITEM, MemberDataKind};
use crate::ports::{BatchStore, Reads, Snapshot, StoreResult};

#[async_trait]
impl BatchStore for TransientStore {
    async fn read_batch(&self, reads: &Reads<'_>) -> StoreResult<Snapshot> {
        let s = self.state();
        let member = s
            .members
            .get(reads.org)
            .and_then(|m| m.get(reads.user))
            .cloned();
        let key = reads.session_key();
        let session = key.as_ref().and_then(|k| s.sessions.get(k).cloned());
        let draft =
            (key.as_ref().filter(|_| session.is_some())).and_then(|k| s.drafts.get(k).cloned());
        let events = match (&key, &member, &session, reads.events) {
            (Some(key), Some(_), Some(_), Some(page)) => s
                .events
                .get(key)
                .map(|log| {
                    log.range(page.after + 1..)
                        .take(page.limit)
                        .map(|(_, e)| e.clone())
                        .collect()
                })
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        Ok(Snapshot {
            member,
            org: reads
                .org_record
                .then(|| s.orgs.get(reads.org).cloned())
                .flatten(),
            usage: reads
                .usage_month
                .and_then(|m| s.usage.get(&(reads.org.clone(), m.to_owned())).copied())
                .unwrap_or_default(),
            member_usage: reads
                .usage_month
                .and_then(|m| {
                    let key = (reads.org.clone(), reads.user.clone(), m.to_owned());
                    s.member_usage.get(&key).map(|m| m.usage)
                })
                .unwrap_or_default(),
            rate_window: reads
                .rate_window
                .and_then(|k| s.rate_windows.get(k).cloned())
                .unwrap_or_default(),
            memory: reads
                .memory
                .then(|| {
                    let kind = MemberDataKind::AgentMemory;
                    s.member_data_value(reads.org, reads.user, kind, MEMORY_ITEM)
                })
                .flatten(),
            session,
            draft,
            events,
        })
    }
}
