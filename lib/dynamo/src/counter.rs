//! Counts the DynamoDB requests a client sends, by operation, so that tests and benchmarks can
//! show what each endpoint costs. An SDK interceptor: it sees every attempt that goes on the
//! wire, retries included.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;

/// Requests sent, by operation name (`GetItem`, `Query`, ...). Clones share the counts.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
}

impl RequestCounter {
    /// The counts so far, and zero from now on.
    pub fn take(&self) -> BTreeMap<String, u64> {
        std::mem::take(&mut *self.counts.lock().expect("request counter lock"))
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self, _context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents, cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let operation = cfg
            .load::<Metadata>()
            .map_or("unknown", |m| m.name())
            .to_owned();
        *self
            .counts
            .lock()
            .expect("request counter lock")
            .entry(operation)
            .or_default() += 1;
        Ok(())
    }
}
