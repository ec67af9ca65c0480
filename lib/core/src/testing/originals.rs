//! `TransientOriginals`: the `Originals` port in memory, by document and generation, for the
//! use-case tests; it takes uploads itself (a pre-signed target) once told to.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use bytes::Bytes;

use crate::clock::{Clock, SystemClock};
use crate::domain::Document;
use crate::ids::{DocumentId, OrgId};
use crate::ports::{Originals, OriginalsError, UploadTarget};

/// Originals in memory, keyed by document and generation.
#[derive(Default)]
pub struct TransientOriginals {
    held: Mutex<HashMap<(String, u64), Bytes>>,
    presigns: AtomicBool,
}

impl TransientOriginals {
    /// From now on, uploads go to a target of its own (as S3's pre-signed PUT), not the service.
    pub fn take_uploads(&self) {
        self.presigns.store(true, Ordering::SeqCst);
    }

    /// The generations held of `document`, in order.
    pub fn generations(&self, document: &DocumentId) -> Vec<u64> {
        let held = self.held.lock().unwrap();
        let mut found: Vec<u64> = (held.keys())
            .filter(|(d, _)| d == document.as_str())
            .map(|(_, g)| *g)
            .collect();
        found.sort();
        found
    }

    /// Whether it holds no original at all.
    pub fn is_empty(&self) -> bool {
        self.held.lock().unwrap().is_empty()
    }
}

#[async_trait]
impl Originals for TransientOriginals {
    async fn put(
        &self, _: &OrgId, document: &DocumentId, generation: u64, bytes: Bytes,
    ) -> Result<(), OriginalsError> {
        let key = (document.as_str().to_owned(), generation);
        self.held.lock().unwrap().insert(key, bytes);
        Ok(())
    }

    async fn get(
        &self, _: &OrgId, document: &DocumentId, generation: u64,
    ) -> Result<Option<Bytes>, OriginalsError> {
        let key = (document.as_str().to_owned(), generation);
        Ok(self.held.lock().unwrap().get(&key).cloned())
    }

    async fn delete(&self, _: &OrgId, document: &DocumentId) -> Result<(), OriginalsError> {
        (self.held.lock().unwrap()).retain(|(d, _), _| d != document.as_str());
        Ok(())
    }

    async fn delete_older(
        &self, _: &OrgId, document: &DocumentId, generation: u64,
    ) -> Result<(), OriginalsError> {
        (self.held.lock().unwrap()).retain(|(d, g), _| d != document.as_str() || *g >= generation);
        Ok(())
    }

    async fn upload_target(
        &self, document: &Document,
    ) -> Result<Option<UploadTarget>, OriginalsError> {
        let presigns = self.presigns.load(Ordering::SeqCst);
        Ok(presigns.then(|| UploadTarget {
            method: "PUT".into(),
            url: format!("https://bucket.example.com/{}", document.id),
            headers: Vec::new(),
            expires_at: SystemClock.now(),
        }))
    }
}
