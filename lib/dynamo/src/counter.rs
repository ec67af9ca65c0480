//! Counts the DynamoDB requests a client sends, by operation, so that tests and benchmarks can
//! show what each endpoint costs. An SDK interceptor: it sees every attempt that goes on the
//! wire, retries included. With the `testing` feature it also notes what the items of each
//! transaction need IAM to allow, which the operation's name does not say.

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
    #[cfg(feature = "testing")]
    item_actions: Arc<Mutex<std::collections::BTreeSet<String>>>,
}

impl RequestCounter {
    /// The counts so far, and zero from now on (with the `testing` feature, the transactions'
    /// item actions are forgotten too: take those first).
    pub fn take(&self) -> BTreeMap<String, u64> {
        #[cfg(feature = "testing")]
        self.take_item_actions();
        std::mem::take(&mut *self.counts.lock().expect("request counter lock"))
    }

    /// The IAM actions the items of the transactions sent so far need (`dynamodb:PutItem`,
    /// `dynamodb:UpdateItem`, `dynamodb:DeleteItem`, `dynamodb:ConditionCheckItem`: IAM
    /// authorises a transaction item by item), and none from now on.
    #[cfg(feature = "testing")]
    pub fn take_item_actions(&self) -> std::collections::BTreeSet<String> {
        std::mem::take(&mut *self.item_actions.lock().expect("request counter lock"))
    }

    #[cfg(feature = "testing")]
    fn note_items(&self, body: Option<&[u8]>) {
        let Some(body) = body.and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok())
        else {
            return;
        };
        let items = body["TransactItems"].as_array().into_iter().flatten();
        let kinds = items
            .filter_map(serde_json::Value::as_object)
            .flat_map(|i| i.keys());
        let mut noted = self.item_actions.lock().expect("request counter lock");
        noted.extend(kinds.map(|kind| format!("dynamodb:{kind}Item")));
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
        #[cfg(feature = "testing")]
        if operation == "TransactWriteItems" {
            self.note_items(_context.request().body().bytes());
        }
        *self
            .counts
            .lock()
            .expect("request counter lock")
            .entry(operation)
            .or_default() += 1;
        Ok(())
    }
}
