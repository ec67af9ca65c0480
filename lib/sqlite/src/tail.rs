//! Tail polls answered without a trip to the blocking pool. A client polls a session's
//! transcript at its end over and over, and the answer stays the same until something commits:
//! so the last read of each tail (membership, session, no new event) is kept, valid only while
//! no connection has committed anything since it was read. SQLite tells that cheaply: a
//! connection's `PRAGMA data_version` moves whenever another connection commits, this
//! process's writer and another process's (the admin commands) alike. So a member's removal or
//! a new event is seen by the very next poll, as without the copies.
//!
//! The check runs on the async worker, in two steps. First, the header of the wal-index (the
//! `-shm` file every connection to a WAL database shares) is read with one `pread`: every
//! commit rewrites it, so when it holds the same bytes as at the last full check, nothing has
//! committed since and the data version is the one that check found. Only otherwise is
//! `PRAGMA data_version` asked, which begins and ends a read transaction on a connection of
//! its own: four file locks, taken without waiting (the connection's busy timeout is zero: a
//! busy lock is "cannot tell", and the poll reads as usual). The header's layout is SQLite's
//! documented WAL-index format (<https://www.sqlite.org/walformat.html>, "the WAL-index
//! header"): two copies, written second copy first, so a read that finds them equal is not
//! torn, and one whose copies differ (a commit under way) takes the full check.

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Mutex;

use knowledge_core::ids::{OrgId, SessionId, UserId};
use knowledge_core::ports::{EventsAfter, Reads, Snapshot};
use rusqlite::Connection;

/// Tails kept at most; past it the copies are dropped and gathered again.
const MAX_TAILS: usize = 10_000;

/// What a tail read asks for: whose session, after which event, how many. Borrowed from the
/// read, so that a poll answered from a copy copies none of it.
#[derive(Clone, Copy)]
pub(crate) struct Tail<'a> {
    org: &'a OrgId,
    user: &'a UserId,
    session: &'a SessionId,
    page: EventsAfter,
}

/// A kept tail: the rest of what it was read for (its session is its key), and the read.
struct Kept {
    org: OrgId,
    user: UserId,
    page: EventsAfter,
    read: Snapshot,
}

impl Kept {
    fn answers(&self, tail: &Tail<'_>) -> bool {
        self.page == tail.page && self.org == *tail.org && self.user == *tail.user
    }
}

/// The kept tails, all read at one data version, by session.
#[derive(Default)]
struct Copies {
    version: i64,
    tails: HashMap<SessionId, Vec<Kept>>,
    /// How many are kept, in all.
    count: usize,
}

/// The two copies of the wal-index header, 48 bytes each, at the start of the `-shm` file.
const WAL_INDEX_HEADERS: usize = 96;

/// The wal-index header as the last full check saw it, and the data version it found.
struct Seen {
    header: [u8; WAL_INDEX_HEADERS],
    version: i64,
}

pub(crate) struct Tails {
    /// Only ever asked for its data version.
    watch: Mutex<Connection>,
    /// The database's wal-index (`None` for a database without one, such as `:memory:`).
    shm: Option<File>,
    seen: Mutex<Option<Seen>>,
    copies: Mutex<Copies>,
}

impl Tails {
    pub(crate) fn open(path: &Path) -> rusqlite::Result<Self> {
        let watch = Connection::open(path)?;
        watch.busy_timeout(std::time::Duration::ZERO)?;
        // Opened after a connection has put the database in WAL mode, so the file exists; a
        // database without one is checked in full every time.
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        Ok(Self {
            watch: Mutex::new(watch),
            shm: File::open(shm).ok(),
            seen: Mutex::default(),
            copies: Mutex::default(),
        })
    }

    /// The data version now, `None` when it cannot be told without waiting.
    pub(crate) fn version(&self) -> Option<i64> {
        // Read before the full check: a commit in between makes the pair stale, never wrong.
        let header = self.wal_index_header();
        if let Some(header) = &header {
            let seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(seen) = seen.as_ref().filter(|s| s.header == *header) {
                return Some(seen.version);
            }
        }
        let version = self.data_version()?;
        if let Some(header) = header {
            *self.seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(Seen { header, version });
        }
        Some(version)
    }

    /// The wal-index header, when both copies read the same (no commit is rewriting them).
    fn wal_index_header(&self) -> Option<[u8; WAL_INDEX_HEADERS]> {
        let mut header = [0; WAL_INDEX_HEADERS];
        self.shm.as_ref()?.read_exact_at(&mut header, 0).ok()?;
        let (first, second) = header.split_at(WAL_INDEX_HEADERS / 2);
        // Byte 12 of a copy is `isInit`: a header not yet written says nothing.
        (first == second && first[12] != 0).then_some(header)
    }

    /// `PRAGMA data_version` on the watching connection. The statement stays prepared.
    fn data_version(&self) -> Option<i64> {
        let watch = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        let mut asked = watch.prepare_cached("PRAGMA data_version").ok()?;
        asked.query_row([], |r| r.get(0)).ok()
    }

    /// What a tail read asks for, if `reads` is one: a transcript page (membership, session
    /// and events, nothing else). Other reads are never kept.
    pub(crate) fn asked<'a>(reads: &Reads<'a>) -> Option<Tail<'a>> {
        let transcript = !reads.org_record
            && reads.usage_month.is_none()
            && reads.rate_window.is_none()
            && !reads.memory;
        match (reads.session, reads.events) {
            (Some(session), Some(page)) if transcript => Some(Tail {
                org: reads.org,
                user: reads.user,
                session,
                page,
            }),
            _ => None,
        }
    }

    /// The copy of `tail`, if it was read at `version`.
    pub(crate) fn get(&self, tail: &Tail<'_>, version: i64) -> Option<Snapshot> {
        let copies = self.copies.lock().unwrap_or_else(|p| p.into_inner());
        if copies.version != version {
            return None;
        }
        let kept = copies.tails.get(tail.session)?;
        kept.iter()
            .find(|k| k.answers(tail))
            .map(|k| k.read.clone())
    }

    /// Keeps `read` as `tail` read at `version` (taken before the read began, so a commit
    /// during the read makes the copy stale, never wrong), if it is a tail: a member's session
    /// with no new event.
    pub(crate) fn put(&self, tail: &Tail<'_>, version: i64, read: &Snapshot) {
        if read.member.is_none() || read.session.is_none() || !read.events.is_empty() {
            return;
        }
        let mut copies = self.copies.lock().unwrap_or_else(|p| p.into_inner());
        if copies.version != version || copies.count >= MAX_TAILS {
            // A new version: everything kept was read before a commit, and none of it can
            // answer again.
            copies.version = version;
            copies.tails.clear();
            copies.count = 0;
        }
        let kept = copies.tails.entry(tail.session.clone()).or_default();
        let read = read.clone();
        match kept.iter_mut().find(|k| k.answers(tail)) {
            Some(k) => k.read = read,
            None => {
                kept.push(Kept {
                    org: tail.org.clone(),
                    user: tail.user.clone(),
                    page: tail.page,
                    read,
                });
                copies.count += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use knowledge_core::clock::Timestamp;
    use knowledge_core::domain::{Member, Role, Session};
    use knowledge_core::ids::SessionKey;

    fn tail_of(tail: &Tail<'_>) -> Snapshot {
        let now = Timestamp(1);
        Snapshot {
            member: Some(Member::new(
                tail.org.clone(),
                tail.user.clone(),
                Role::Viewer,
                now,
            )),
            session: Some(Session::new(
                SessionKey::new(tail.user, tail.org, tail.session),
                "t".into(),
                now,
            )),
            ..Snapshot::default()
        }
    }

    #[test]
    fn a_kept_tail_answers_at_the_version_it_was_read_and_no_other() {
        let tails = Tails::open(Path::new(":memory:")).unwrap();
        let (org, user, session) = (OrgId::generate(), UserId::generate(), SessionId::generate());
        let page = EventsAfter {
            after: 3,
            limit: 101,
        };
        let tail = Tail {
            org: &org,
            user: &user,
            session: &session,
            page,
        };
        let read = tail_of(&tail);
        tails.put(&tail, 7, &read);
        let kept = tails
            .get(&tail, 7)
            .expect("kept at the version it was read");
        assert_eq!(kept.session, read.session);
        assert!(
            tails.get(&tail, 8).is_none(),
            "a commit since makes it stale"
        );
        // Another member, or another page, of the same session is not this tail.
        let (stranger, later) = (UserId::generate(), EventsAfter { after: 4, ..page });
        for other in [
            Tail {
                user: &stranger,
                ..tail
            },
            Tail {
                page: later,
                ..tail
            },
        ] {
            assert!(tails.get(&other, 7).is_none());
        }
        // A read at a newer version drops every older copy.
        let another = SessionId::generate();
        let newer = Tail {
            session: &another,
            ..tail
        };
        tails.put(&newer, 9, &tail_of(&newer));
        assert!(tails.get(&tail, 7).is_none());
        // Nothing but a member's session without new events is kept.
        let mut no_member = tail_of(&tail);
        no_member.member = None;
        tails.put(&tail, 9, &no_member);
        assert!(tails.get(&tail, 9).is_none());
    }

    #[test]
    fn the_wal_index_header_stays_the_same_until_a_commit_and_changes_with_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let writer = Connection::open(&path).unwrap();
        writer
            .execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (n INTEGER);")
            .unwrap();
        let tails = Tails::open(&path).unwrap();
        let mut last = tails.wal_index_header().expect("a WAL database has one");
        let version = tails.version().unwrap();
        for n in 0..5 {
            assert_eq!(tails.wal_index_header(), Some(last), "no commit, no change");
            assert_eq!(tails.version(), Some(version + n));
            writer.execute("INSERT INTO t VALUES (?1)", [n]).unwrap();
            let now = tails.wal_index_header().unwrap();
            assert_ne!(now, last, "commit {n} rewrote it");
            last = now;
        }
    }
}
