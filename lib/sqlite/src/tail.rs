//! Tail polls answered without a trip to the blocking pool. A client polls a session's
//! transcript at its end over and over, and the answer stays the same until something commits:
//! so the last read of each tail (membership, session, no new event) is kept, valid only while
//! no connection has committed anything since it was read. SQLite tells that cheaply: a
//! connection's `PRAGMA data_version` moves whenever another connection commits, this
//! process's writer and another process's (the admin commands) alike. So a member's removal or
//! a new event is seen by the very next poll, as without the copies.
//!
//! The check runs on the async worker, in two steps. First, the header of the wal-index (the
//! `-shm` file every connection to a WAL database shares, mapped into memory by each) is read
//! from SQLite's own mapping of it: every commit rewrites it, so when it holds the same bytes
//! as at the last full check, nothing has committed since and the data version is the one that
//! check found. Only otherwise is `PRAGMA data_version` asked, which begins and ends a read
//! transaction on a connection of its own: four file locks, taken without waiting (the
//! connection's busy timeout is zero: a busy lock is "cannot tell", and the poll reads as
//! usual). The header's layout is SQLite's documented WAL-index format
//! (<https://www.sqlite.org/walformat.html>, "the WAL-index header"): two copies, written second
//! copy first, so a read of the first copy then the second that finds them equal is not torn,
//! and one whose copies differ (a commit under way) takes the full check.

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

use knowledge_core::ids::{OrgId, SessionId, UserId};
use knowledge_core::ports::{EventsAfter, Reads, Snapshot};
use rusqlite::{Connection, ffi};

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

/// The two copies of the wal-index header, 48 bytes (12 words) each, at the start of the
/// `-shm` file.
const HEADER_WORDS: usize = 12;

/// The wal-index header, both copies, as the native-endian words SQLite writes.
type Header = [u32; 2 * HEADER_WORDS];

/// The size of a region of the wal-index, as SQLite's WAL code maps them (`WALINDEX_PGSZ`: a
/// region of the unix VFS's `xShmMap` must be asked for with the size of all the others).
const WAL_INDEX_REGION: c_int = 32 * 1024;

/// The wal-index header as the last full check saw it, and the data version it found.
struct Seen {
    header: Header,
    version: i64,
}

/// The first region of the wal-index, as SQLite maps it for the watching connection: the
/// memory its own readers read the header from, written in place by every connection's
/// commits, in this process and in others.
struct WalIndex(NonNull<[AtomicU32; 2 * HEADER_WORDS]>);

// SAFETY: the pointer is to shared memory that stays mapped for as long as `Tails::watch`
// lives (see `WalIndex::of`), and it is only ever read, with atomic loads, from any thread.
unsafe impl Send for WalIndex {}
// SAFETY: as for `Send`: reads only, atomic, of memory that outlives every `&WalIndex`.
unsafe impl Sync for WalIndex {}

impl WalIndex {
    /// SQLite's mapping of the first region of `watch`'s wal-index, `None` if it has none (not
    /// a WAL database, or its `-shm` file smaller than a region: one not yet written).
    ///
    /// The mapping is SQLite's (the unix VFS's `xShmMap`, reached through
    /// `SQLITE_FCNTL_FILE_POINTER`), the same that the connection's WAL reads the header from:
    /// `xShmMap` hands out the region it already mapped, and maps it otherwise. SQLite unmaps
    /// it only when the last connection of this process to the database closes its wal-index,
    /// which `watch` does only when it is closed (it never leaves WAL mode: nothing sets its
    /// journal mode). And the `-shm` file behind it is never truncated while it is mapped:
    /// SQLite truncates it only when a connection attaches to it while no connection of any
    /// process holds its `DMS` lock (`unixLockSharedMemory`), and `watch` holds that lock, in
    /// shared mode, from its first read in WAL mode (the caller's `PRAGMA data_version`) until
    /// it is closed. A region is only mapped once the file holds all of it (`bExtend` 0: a
    /// file shorter than a region, such as the 3 bytes SQLite truncates it to, maps nothing),
    /// so the 96 bytes read are always inside the file.
    ///
    /// So the pointer is valid for as long as `watch` is open, and `Tails` keeps it no longer:
    /// its `wal_index` is dropped before its `watch` (field order).
    fn of(watch: &Connection) -> Option<Self> {
        let mode: String = watch
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .ok()?;
        if !mode.eq_ignore_ascii_case("wal") {
            // A wal-index would be made for a database that has none.
            return None;
        }
        let mut file: *mut ffi::sqlite3_file = std::ptr::null_mut();
        // SAFETY: `watch.handle()` is the open connection, used by nothing else while the
        // caller holds it (`Tails::watch`'s lock); `SQLITE_FCNTL_FILE_POINTER` writes a
        // `sqlite3_file *` through its argument, a pointer to one.
        let rc = unsafe {
            ffi::sqlite3_file_control(
                watch.handle(),
                c"main".as_ptr(),
                ffi::SQLITE_FCNTL_FILE_POINTER,
                (&raw mut file).cast(),
            )
        };
        if rc != ffi::SQLITE_OK || file.is_null() {
            return None;
        }
        // SAFETY: `file` is the main database's open file, valid while `watch` is open; its
        // `pMethods` is null or points to the VFS's static method table.
        let methods = unsafe { (*file).pMethods.as_ref() }?;
        // Version 2 of the methods is the first with `xShmMap`.
        let shm_map = methods.xShmMap.filter(|_| methods.iVersion >= 2)?;
        let mut region: *mut c_void = std::ptr::null_mut();
        // SAFETY: `file` is valid (above) and `region` a place for the pointer it sets; region
        // 0 of the size SQLite's WAL asks for, not extending the file (`bExtend` 0). The unix
        // VFS takes its own lock around the shared-memory node; the connection is ours alone.
        let rc = unsafe { shm_map(file, 0, WAL_INDEX_REGION, 0, &raw mut region) };
        if rc != ffi::SQLITE_OK {
            return None;
        }
        // A region is mapped at a page boundary: aligned for the words read.
        NonNull::new(region.cast()).map(Self)
    }

    /// The header, when both copies read the same (no commit is rewriting them) and it has
    /// been written.
    fn header(&self) -> Option<Header> {
        // SAFETY: mapped and at least as long as the header for as long as `self` lives
        // (`WalIndex::of`). Other connections and processes write it concurrently, so it is
        // read with atomic loads only, never through a plain reference to its bytes.
        let words = unsafe { self.0.as_ref() };
        let mut header = [0; 2 * HEADER_WORDS];
        let (first, second) = header.split_at_mut(HEADER_WORDS);
        // As SQLite reads it (`walIndexTryHdr`): the first copy, then the second, no load of
        // the second before those of the first (acquire); a commit writes the second, then the
        // first, with a barrier between. So equal copies are one whole header.
        for (word, shared) in first.iter_mut().zip(&words[..HEADER_WORDS]) {
            *word = shared.load(Ordering::Acquire);
        }
        for (word, shared) in second.iter_mut().zip(&words[HEADER_WORDS..]) {
            *word = shared.load(Ordering::Relaxed);
        }
        // Byte 12 of a copy is `isInit`: a header not yet written says nothing.
        let written = first[3].to_ne_bytes()[0] != 0;
        (first == second && written).then_some(header)
    }
}

pub(crate) struct Tails {
    /// The database's wal-index, set once `watch` has read the database: `None` for one
    /// without a wal-index, such as `:memory:`, which is then checked in full every time.
    /// Before `watch`, so dropped before it.
    wal_index: OnceLock<Option<WalIndex>>,
    /// Only ever asked for its data version (and, once, for its wal-index).
    watch: Mutex<Connection>,
    seen: Mutex<Option<Seen>>,
    copies: Mutex<Copies>,
}

impl Tails {
    pub(crate) fn open(path: &Path) -> rusqlite::Result<Self> {
        let watch = Connection::open(path)?;
        watch.busy_timeout(std::time::Duration::ZERO)?;
        Ok(Self {
            wal_index: OnceLock::new(),
            watch: Mutex::new(watch),
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

    /// The wal-index header, when there is one and both its copies read the same.
    fn wal_index_header(&self) -> Option<Header> {
        self.wal_index.get()?.as_ref()?.header()
    }

    /// `PRAGMA data_version` on the watching connection. The statement stays prepared. The
    /// first time it answers, the wal-index it has just read is mapped for the next checks.
    fn data_version(&self) -> Option<i64> {
        let watch = self.watch.lock().unwrap_or_else(|p| p.into_inner());
        let mut asked = watch.prepare_cached("PRAGMA data_version").ok()?;
        let version = asked.query_row([], |r| r.get(0)).ok()?;
        drop(asked);
        // Under `watch`'s lock: asked once.
        if self.wal_index.get().is_none() {
            let _ = self.wal_index.set(WalIndex::of(&watch));
        }
        Some(version)
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

    /// The `-shm` file's header as the file holds it, in the words `WalIndex` reads.
    fn header_in_file(path: &Path) -> Header {
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        let bytes = std::fs::read(shm).unwrap();
        let mut words = bytes[..4 * 2 * HEADER_WORDS].chunks_exact(4);
        std::array::from_fn(|_| u32::from_ne_bytes(words.next().unwrap().try_into().unwrap()))
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
        assert_eq!(tails.wal_index_header(), None, "mapped at the first check");
        let version = tails.version().unwrap();
        let mut last = tails.wal_index_header().expect("a WAL database has one");
        assert_eq!(last, header_in_file(&path), "the mapping is of the file");
        for n in 0..5 {
            assert_eq!(tails.wal_index_header(), Some(last), "no commit, no change");
            assert_eq!(tails.version(), Some(version + n));
            writer.execute("INSERT INTO t VALUES (?1)", [n]).unwrap();
            let now = tails.wal_index_header().unwrap();
            assert_ne!(now, last, "commit {n} rewrote it");
            assert_eq!(now, header_in_file(&path), "the mapping is of the file");
            last = now;
        }
        // Truncating the log makes SQLite write it from its start again, with new salts: the
        // header moves all the same.
        writer
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
            .unwrap();
        writer.execute("INSERT INTO t VALUES (5)", []).unwrap();
        assert_ne!(tails.wal_index_header(), Some(last));
        assert_eq!(tails.version(), Some(version + 5));
    }

    #[test]
    fn a_database_without_a_wal_index_is_checked_in_full_and_gets_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.db");
        let writer = Connection::open(&path).unwrap();
        writer.execute_batch("CREATE TABLE t (n INTEGER);").unwrap();
        let tails = Tails::open(&path).unwrap();
        let version = tails.version().unwrap();
        writer.execute("INSERT INTO t VALUES (1)", []).unwrap();
        assert_eq!(tails.version(), Some(version + 1));
        assert_eq!(tails.wal_index_header(), None);
        let mut shm = path.as_os_str().to_owned();
        shm.push("-shm");
        assert!(
            !Path::new(&shm).exists(),
            "no wal-index made for a rollback-journal database"
        );
    }
}
