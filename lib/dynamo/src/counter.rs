//! Counts the DynamoDB requests a client sends, by operation, so that tests and benchmarks can
//! show what each endpoint costs. An SDK interceptor: it sees every attempt that goes on the
//! wire, retries included (and no pre-signed request, which is made and never sent). With the `testing` feature it also notes what IAM must allow that
//! the operation's name does not say: the items of each transaction, and what each query reads
//! (the table or an index).

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

    /// What the transactions and queries sent so far need IAM to allow, and nothing from now
    /// on: the actions of the transactions' items (`dynamodb:PutItem`, `dynamodb:UpdateItem`,
    /// `dynamodb:DeleteItem`, `dynamodb:ConditionCheckItem`: IAM authorises a transaction item
    /// by item), and for each query `dynamodb:Query` on the table or `dynamodb:Query index/<name>`
    /// on an index.
    #[cfg(feature = "testing")]
    pub fn take_item_actions(&self) -> std::collections::BTreeSet<String> {
        std::mem::take(&mut *self.item_actions.lock().expect("request counter lock"))
    }

    #[cfg(feature = "testing")]
    fn note_needs(&self, operation: &str, body: Option<&[u8]>) {
        let body = body.and_then(|b| serde_json::from_slice::<serde_json::Value>(b).ok());
        let Some(body) = body else {
            return;
        };
        let mut noted = self.item_actions.lock().expect("request counter lock");
        if operation == "Query" {
            noted.insert(match body["IndexName"].as_str() {
                Some(index) => format!("dynamodb:Query index/{index}"),
                None => "dynamodb:Query".to_owned(),
            });
            return;
        }
        let items = body["TransactItems"].as_array().into_iter().flatten();
        let kinds = items
            .filter_map(serde_json::Value::as_object)
            .flat_map(|i| i.keys());
        noted.extend(kinds.map(|kind| format!("dynamodb:{kind}Item")));
    }
}

impl Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self, context: &BeforeTransmitInterceptorContextRef<'_>,
        _runtime_components: &RuntimeComponents, cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        // A pre-signed request (its signature in the query, which the SDK puts nowhere else)
        // stops here without being sent: someone else sends it, if anyone does.
        if context.request().uri().contains("X-Amz-Signature=") {
            return Ok(());
        }
        let operation = cfg
            .load::<Metadata>()
            .map_or("unknown", |m| m.name())
            .to_owned();
        #[cfg(feature = "testing")]
        if operation == "TransactWriteItems" || operation == "Query" {
            self.note_needs(&operation, context.request().body().bytes());
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
