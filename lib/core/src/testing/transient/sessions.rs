//! [`SessionStore`] in memory: the sessions, their drafts and event logs, and the rows a test
//! counts ([`StoredRows`]).

use std::sync::atomic::Ordering;

use async_trait::async_trait;

use super::TransientStore;
use crate::domain::{Draft, Event, FoundSessions, Session, SessionSummary, TitleQuery};
use crate::ids::{OrgId, RunId, SessionKey, UserId};
use crate::ports::{Charge, Gate, SessionStore, StoreError, StoreResult, StoredRows};

#[async_trait]
impl SessionStore for TransientStore {
    async fn create_session(
        &self, session: &Session, events: &[Event], gate: Option<&Gate<'_>>,
    ) -> StoreResult<()> {
        let mut s = self.state();
        if s.sessions.contains_key(&session.key) {
            return Err(StoreError::AlreadyExists);
        }
        s.pass(&session.key, gate)?;
        s.sessions.insert(session.key.clone(), session.clone());
        let log = s.events.entry(session.key.clone()).or_default();
        log.extend(events.iter().map(|e| (e.seq, e.clone())));
        Ok(())
    }

    async fn get_session(&self, key: &SessionKey) -> StoreResult<Option<Session>> {
        Ok(self.state().sessions.get(key).cloned())
    }

    async fn commit_session(
        &self, session: &Session, expected_version: u64, events: &[Event], charge: Option<&Charge>,
        gate: Option<&Gate<'_>>,
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.sessions.get(&session.key).ok_or(StoreError::Gone)?;
        let lost = self
            .lose
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if lost || stored.version != expected_version {
            return Err(StoreError::Conflict);
        }
        s.pass(&session.key, gate)?;
        s.sessions.insert(session.key.clone(), session.clone());
        // Every commit writes the record whole, as DynamoDB's Put does: the draft goes.
        s.drafts.remove(&session.key);
        let log = s.events.entry(session.key.clone()).or_default();
        log.extend(events.iter().map(|e| (e.seq, e.clone())));
        if let Some(charge) = charge {
            let k = &session.key;
            let usage = s.usage.entry((k.org.clone(), charge.month.clone()));
            usage.or_default().cost_micros += charge.micros;
            let member = (k.org.clone(), k.user.clone(), charge.month.clone());
            let (t, micros) = (charge.tokens, charge.micros);
            let month = s.member_usage.entry(member).or_default();
            month.add_call(charge.day, &charge.model, t.input, t.output, micros);
        }
        Ok(())
    }

    async fn rewrite_events(
        &self, session: &Session, expected_version: u64, rewritten: &[Event],
    ) -> StoreResult<()> {
        let mut s = self.state();
        let stored = s.sessions.get(&session.key).ok_or(StoreError::Gone)?;
        if stored.version != expected_version {
            return Err(StoreError::Conflict);
        }
        s.sessions.insert(session.key.clone(), session.clone());
        s.drafts.remove(&session.key);
        let log = s.events.entry(session.key.clone()).or_default();
        for e in rewritten {
            if let Some(stored) = log.get_mut(&e.seq) {
                stored.body = e.body.clone();
            }
        }
        Ok(())
    }

    async fn list_events(
        &self, key: &SessionKey, after: u64, limit: usize,
    ) -> StoreResult<Vec<Event>> {
        Ok(self
            .state()
            .events
            .get(key)
            .map(|log| {
                log.range(after + 1..)
                    .take(limit)
                    .map(|(_, e)| e.clone())
                    .collect()
            })
            .unwrap_or_default())
    }

    async fn list_sessions(
        &self, user: &UserId, org: &OrgId, limit: usize,
    ) -> StoreResult<Vec<SessionSummary>> {
        let s = self.state();
        let mut listed: Vec<&Session> = s
            .sessions
            .values()
            .filter(|v| v.key.user == *user && v.key.org == *org && !v.deleting)
            .collect();
        listed.sort_by(|a, b| {
            (b.updated_at, b.key.session.as_str()).cmp(&(a.updated_at, a.key.session.as_str()))
        });
        Ok(listed
            .into_iter()
            .take(limit)
            .map(SessionSummary::of)
            .collect())
    }

    async fn find_sessions(
        &self, user: &UserId, org: &OrgId, query: &TitleQuery, limit: usize,
    ) -> StoreResult<FoundSessions> {
        let all = self.list_sessions(user, org, usize::MAX).await?;
        Ok(FoundSessions {
            sessions: (all.into_iter())
                .filter(|s| query.matches(&s.title))
                .take(limit)
                .collect(),
            complete: true,
        })
    }

    async fn put_draft(&self, key: &SessionKey, run: &RunId, draft: &Draft) -> StoreResult<bool> {
        let mut s = self.state();
        match s.sessions.get(key) {
            Some(stored) if !stored.deleting && stored.run_id.as_ref() == Some(run) => {
                s.drafts.insert(key.clone(), draft.clone());
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn delete_session(&self, key: &SessionKey) -> StoreResult<bool> {
        let mut s = self.state();
        s.events.remove(key);
        s.drafts.remove(key);
        Ok(s.sessions.remove(key).is_some())
    }

    async fn deleting_sessions(&self, limit: usize) -> StoreResult<Vec<SessionKey>> {
        Ok(self
            .state()
            .sessions
            .values()
            .filter(|v| v.deleting)
            .take(limit)
            .map(|v| v.key.clone())
            .collect())
    }

    /// A test double: the sessions are filtered one by one, which a real store's index avoids.
    async fn stale_runs(
        &self, before: crate::clock::Timestamp, limit: usize,
    ) -> StoreResult<Vec<SessionKey>> {
        Ok(self
            .state()
            .sessions
            .values()
            .filter(|v| v.stale_at().is_some_and(|at| at < before))
            .take(limit)
            .map(|v| v.key.clone())
            .collect())
    }
}

#[async_trait]
impl StoredRows for TransientStore {
    async fn rows_for(&self, key: &SessionKey) -> StoreResult<(u64, u64)> {
        let s = self.state();
        let sessions = u64::from(s.sessions.contains_key(key));
        let events = s.events.get(key).map_or(0, |log| log.len() as u64);
        Ok((sessions, events))
    }
}
