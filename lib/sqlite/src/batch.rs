//! [`BatchStore`] on SQLite: the records a request reads before it writes (and a transcript's
//! page of events after its session), on one reader connection in one trip to the blocking
//! pool; a tail poll that nothing can have changed is answered from [`Tails`] without it.

use async_trait::async_trait;
use knowledge_core::domain::{MEMORY_ITEM, MemberDataKind};
use knowledge_core::ports::{BatchStore, RateWindow, Reads, Snapshot, StoreResult};

const AGENT_MEMORY: &str = MemberDataKind::AgentMemory.as_str();

use crate::SqliteStore;
use crate::directory::{member_data_value, read_member};
use crate::limits::{read_member_usage, read_rate_window, read_usage};
use crate::orgs::read_org;
use crate::sessions::{read_events, read_session_and_draft};
use crate::tail::Tails;

#[async_trait]
impl BatchStore for SqliteStore {
    async fn read_batch(&self, reads: &Reads<'_>) -> StoreResult<Snapshot> {
        // A tail poll whose answer no commit can have changed since it was last read.
        let tail = Tails::asked(reads).and_then(|tail| Some((tail, self.inner.tails.version()?)));
        if let Some((tail, version)) = &tail
            && let Some(kept) = self.inner.tails.get(tail, *version)
        {
            return Ok(kept);
        }
        let read = self.read_uncached(reads).await?;
        if let Some((tail, version)) = tail {
            self.inner.tails.put(&tail, version, &read);
        }
        Ok(read)
    }
}

impl SqliteStore {
    async fn read_uncached(&self, reads: &Reads<'_>) -> StoreResult<Snapshot> {
        let (org, user) = (reads.org.clone(), reads.user.clone());
        let org_record = reads.org_record;
        let month = reads.usage_month.map(str::to_owned);
        let window = reads.rate_window.map(str::to_owned);
        let session = reads.session_key();
        let page = reads.events;
        let memory = reads.memory;
        self.read(move |c| {
            let member = read_member(c, &org, &user)?;
            let (found, draft) = match &session {
                Some(key) => read_session_and_draft(c, key)?.unzip(),
                None => (None, None),
            };
            let draft = draft.flatten();
            let events = match (&session, &member, &found, page) {
                (Some(key), Some(_), Some(_), Some(page)) => {
                    read_events(c, key, page.after, page.limit)?
                }
                _ => Vec::new(),
            };
            Ok(Snapshot {
                member,
                org: if org_record { read_org(c, &org)? } else { None },
                usage: match &month {
                    Some(m) => read_usage(c, &org, m)?,
                    None => Default::default(),
                },
                member_usage: match &month {
                    Some(m) => read_member_usage(c, &org, &user, m)?,
                    None => Default::default(),
                },
                rate_window: match &window {
                    Some(key) => read_rate_window(c, key)?,
                    None => RateWindow::default(),
                },
                session: found,
                draft,
                events,
                memory: match memory {
                    true => member_data_value(c, &org, &user, AGENT_MEMORY, MEMORY_ITEM)?,
                    false => None,
                },
            })
        })
        .await
    }
}
