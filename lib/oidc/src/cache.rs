//! The per-issuer cache of discovery documents and signing keys: an issuer's document is used
//! for [`DISCOVERY_TTL`], fetched by one sign-in at a time while the others of that issuer wait
//! for it (other issuers never do), and its keys are fetched again for an unknown key id at
//! most once per [`KEY_REFETCH_INTERVAL`].

use std::collections::HashMap;
use std::error::Error;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use knowledge_core::ports::{BackendError, IdentityError};
use openidconnect::IssuerUrl;
use openidconnect::core::CoreJsonWebKeySet;

use crate::verify::Metadata;
use knowledge_oauth::http::BoundedHttp;

/// How long an issuer's discovery document and keys are used before they are fetched again.
pub const DISCOVERY_TTL: Duration = Duration::from_secs(60 * 60);
/// The least time between two fetches of an issuer's keys for an unknown key id, so that a
/// flood of tokens naming made-up key ids cannot make the service hammer the provider.
pub const KEY_REFETCH_INTERVAL: Duration = Duration::from_secs(30);

/// One issuer's discovery document with its keys. Replaced whole, never edited: a
/// verification holds one consistent snapshot.
pub(crate) struct Entry {
    pub(crate) metadata: Metadata,
    /// When the discovery document was fetched (a fetch of the keys alone keeps it).
    fetched: Instant,
}

/// One issuer's place in the cache.
#[derive(Default)]
struct Slot {
    current: Mutex<Option<Arc<Entry>>>,
    /// Held across this issuer's fetches only.
    fetching: tokio::sync::Mutex<FetchLog>,
}

/// What the fetches of one issuer left behind.
#[derive(Default)]
struct FetchLog {
    /// When the last discovery failed, and why: sign-ins that waited for that fetch get its
    /// failure instead of trying again one after the other.
    failure: Option<(Instant, Arc<BackendError>)>,
    /// When the keys were last fetched for an unknown key id, whether that fetch worked or not.
    key_refetch: Option<Instant>,
}

/// A failure of a fetch that several sign-ins waited for: the same cause, shared.
#[derive(Debug)]
struct Shared(Arc<BackendError>);

impl fmt::Display for Shared {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl Error for Shared {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.0.source()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Slot {
    fn current(&self) -> Option<Arc<Entry>> {
        lock(&self.current).clone()
    }

    fn fresh(&self) -> Option<Arc<Entry>> {
        self.current()
            .filter(|e| e.fetched.elapsed() < DISCOVERY_TTL)
    }

    fn set(&self, entry: Arc<Entry>) {
        *lock(&self.current) = Some(entry);
    }
}

/// Discovery documents and keys by issuer, fetched over [`BoundedHttp`].
pub(crate) struct Issuers {
    http: BoundedHttp,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
}

impl Issuers {
    pub(crate) fn new(http: BoundedHttp) -> Self {
        Self {
            http,
            slots: Mutex::new(HashMap::new()),
        }
    }

    fn slot(&self, issuer: &str) -> Arc<Slot> {
        lock(&self.slots)
            .entry(issuer.to_owned())
            .or_default()
            .clone()
    }

    /// The issuer's document, from the cache while fresh, else fetched: once for all the
    /// sign-ins of that issuer that ask meanwhile. Errors: `Unavailable`.
    pub(crate) async fn get(&self, issuer: &str) -> Result<Arc<Entry>, IdentityError> {
        let asked = Instant::now();
        let slot = self.slot(issuer);
        if let Some(entry) = slot.fresh() {
            return Ok(entry);
        }
        let mut log = slot.fetching.lock().await;
        if let Some(entry) = slot.fresh() {
            return Ok(entry);
        }
        if let Some((at, cause)) = &log.failure
            && *at >= asked
        {
            return Err(IdentityError::Unavailable(Box::new(Shared(cause.clone()))));
        }
        self.fetch(issuer, &slot, &mut log).await
    }

    /// The issuer's document and keys, fetched now whatever the cache holds. Errors:
    /// `Unavailable`.
    pub(crate) async fn refresh(&self, issuer: &str) -> Result<Arc<Entry>, IdentityError> {
        let slot = self.slot(issuer);
        let mut log = slot.fetching.lock().await;
        self.fetch(issuer, &slot, &mut log).await
    }

    async fn fetch(
        &self, issuer: &str, slot: &Slot, log: &mut FetchLog,
    ) -> Result<Arc<Entry>, IdentityError> {
        match self.discover(issuer).await {
            Ok(metadata) => {
                let entry = Arc::new(Entry {
                    metadata,
                    fetched: Instant::now(),
                });
                slot.set(entry.clone());
                log.failure = None;
                Ok(entry)
            }
            Err(cause) => {
                let cause = Arc::new(cause);
                log.failure = Some((Instant::now(), cause.clone()));
                Err(IdentityError::Unavailable(Box::new(Shared(cause))))
            }
        }
    }

    /// The discovery document at `issuer` with its keys. openidconnect checks that the
    /// document's `issuer` is exactly `issuer`.
    async fn discover(&self, issuer: &str) -> Result<Metadata, BackendError> {
        let url = IssuerUrl::new(issuer.to_owned())?;
        Ok(Metadata::discover_async(url, &self.http).await?)
    }

    /// For a token whose key id `seen` does not hold: a newer document of the issuer if one
    /// arrived meanwhile, else `seen` with its keys fetched again, unless they were fetched for
    /// an unknown key id less than [`KEY_REFETCH_INTERVAL`] ago (then `None`). Errors:
    /// `Unavailable` when the keys cannot be fetched.
    pub(crate) async fn refetch_keys(
        &self, issuer: &str, seen: &Arc<Entry>,
    ) -> Result<Option<Arc<Entry>>, IdentityError> {
        let slot = self.slot(issuer);
        let mut log = slot.fetching.lock().await;
        if let Some(current) = slot.current()
            && !Arc::ptr_eq(&current, seen)
        {
            return Ok(Some(current));
        }
        if log
            .key_refetch
            .is_some_and(|at| at.elapsed() < KEY_REFETCH_INTERVAL)
        {
            return Ok(None);
        }
        log.key_refetch = Some(Instant::now());
        tracing::info!(
            issuer,
            "fetching the provider's keys again for an unknown key id"
        );
        let jwks = CoreJsonWebKeySet::fetch_async(seen.metadata.jwks_uri(), &self.http)
            .await
            .map_err(|e| IdentityError::Unavailable(e.into()))?;
        let entry = Arc::new(Entry {
            metadata: seen.metadata.clone().set_jwks(jwks),
            fetched: seen.fetched,
        });
        slot.set(entry.clone());
        Ok(Some(entry))
    }
}
