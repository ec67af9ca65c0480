//! The answer in progress: the text the agent has written so far in the agent call in flight,
//! kept beside the session (never in its log) while the turn runs, and shown by the transcript
//! until the answer is committed.

use serde::{Deserialize, Serialize};

use super::{Awaiting, Session};
use crate::clock::Timestamp;

/// Characters of a draft kept at most: the answer goes on past it, and arrives whole with its
/// `agent_message`.
pub const DRAFT_CHARS: usize = 16_000;

/// The text an agent call has written so far, and which call it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    pub text: String,
    pub updated_at: Timestamp,
    /// The call that wrote it: its turn's user message and the turn's step.
    pub mark: DraftMark,
}

/// Which agent call a draft belongs to: the turn (its user message) and the step in it. Every
/// commit of a step moves the step, so a draft outlives its call only as a stale copy, never
/// shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DraftMark {
    pub user_seq: u64,
    pub step: u32,
}

/// What a draft keeps of `text`: its first [`DRAFT_CHARS`] characters.
pub fn draft_text(text: &str) -> &str {
    match text.char_indices().nth(DRAFT_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

impl Draft {
    /// `text` ([`draft_text`] of it) as written at `at` by the call `mark`.
    pub fn new(text: &str, at: Timestamp, mark: DraftMark) -> Self {
        Self {
            text: draft_text(text).to_owned(),
            updated_at: at,
            mark,
        }
    }
}

impl Session {
    /// The mark of the agent call this session waits on, if it waits on one: a run, a turn at
    /// the head of `pending`, and the turn waiting on the agent.
    pub fn draft_mark(&self) -> Option<DraftMark> {
        let user_seq = *self.pending.first()?;
        self.run_id.as_ref()?;
        match &self.turn {
            None => Some(DraftMark { user_seq, step: 0 }),
            Some(t) if t.awaiting == Awaiting::Agent => Some(DraftMark {
                user_seq,
                step: t.step,
            }),
            Some(_) => None,
        }
    }

    /// `draft` if it is the one of the agent call this session waits on now; a stale copy (its
    /// call committed, or was cancelled) is not.
    pub fn current_draft(&self, draft: Option<Draft>) -> Option<Draft> {
        draft.filter(|d| self.cancelled_at.is_none() && self.draft_mark() == Some(d.mark))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::TurnProgress;
    use crate::ids::{OrgId, RunId, SessionId, SessionKey, UserId};

    fn running() -> Session {
        let key = SessionKey::new(
            &UserId::parse("usr_a").unwrap(),
            &OrgId::parse("org_a").unwrap(),
            &SessionId::generate(),
        );
        let mut s = Session::new(key, "t".into(), Timestamp(0));
        s.start_run(RunId::generate(), Timestamp(0), None);
        s.pending = vec![3];
        s
    }

    #[test]
    fn a_draft_is_shown_only_while_its_own_agent_call_is_the_one_awaited() {
        let mut s = running();
        let mark = s.draft_mark().expect("the first call of the turn");
        let draft = Draft::new("Half an ans", Timestamp(5), mark);
        assert_eq!(s.current_draft(Some(draft.clone())), Some(draft.clone()));
        // The call committed tool uses: it waits on tools, then on the next call.
        s.turn = Some(TurnProgress {
            step: 1,
            agent_calls: 1,
            from_seq: 4,
            awaiting: Awaiting::Tools(vec![4]),
            approvals: vec![],
            calling: None,
        });
        assert_eq!(s.current_draft(Some(draft.clone())), None);
        s.turn.as_mut().unwrap().awaiting = Awaiting::Agent;
        assert_eq!(s.current_draft(Some(draft.clone())), None);
        let next = Draft::new("Now", Timestamp(9), s.draft_mark().unwrap());
        assert_eq!(s.current_draft(Some(next.clone())), Some(next.clone()));
        // Cancelled, or the run over: none.
        s.cancelled_at = Some(Timestamp(10));
        assert_eq!(s.current_draft(Some(next.clone())), None);
        s.cancelled_at = None;
        s.run_id = None;
        assert_eq!(s.current_draft(Some(next)), None);
    }

    #[test]
    fn a_draft_keeps_its_first_characters_only() {
        let mark = DraftMark {
            user_seq: 1,
            step: 0,
        };
        let d = Draft::new(&"é".repeat(DRAFT_CHARS + 5), Timestamp(0), mark);
        assert_eq!(d.text.chars().count(), DRAFT_CHARS);
    }
}
