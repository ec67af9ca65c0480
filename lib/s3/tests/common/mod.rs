//! A bucket of its own on moto for each test (moto's endpoint is the one the DynamoDB cases
//! use: `KNOWLEDGE_TEST_DYNAMODB_ENDPOINT`; it serves S3 too).
#![allow(dead_code)] // Each test file uses some of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextRef;
use aws_sdk_s3::config::{ConfigBag, Credentials, Intercept, RuntimeComponents};

/// Counts the conditional writes S3 refused (412, 409).
#[derive(Debug, Clone, Default)]
pub struct Refusals(Arc<AtomicUsize>);

impl Refusals {
    pub fn count(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

impl Intercept for Refusals {
    fn name(&self) -> &'static str {
        "Refusals"
    }

    fn read_before_deserialization(
        &self, context: &BeforeDeserializationInterceptorContextRef<'_>, _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        if matches!(context.response().status().as_u16(), 409 | 412) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// Holds the first upload of a manifest until told to go on, having said it got there: a
/// writer stopped between its copy and its conditional write, while another writer publishes.
#[derive(Debug, Clone)]
pub struct Pause {
    reached: Arc<std::sync::Mutex<Option<std::sync::mpsc::Sender<()>>>>,
    go: Arc<std::sync::Mutex<std::sync::mpsc::Receiver<()>>>,
}

impl Pause {
    /// The pause, the receiver told when a writer reached it, and the sender that lets it go on.
    pub fn new() -> (
        Self,
        std::sync::mpsc::Receiver<()>,
        std::sync::mpsc::Sender<()>,
    ) {
        let (reached_tx, reached_rx) = std::sync::mpsc::channel();
        let (go_tx, go_rx) = std::sync::mpsc::channel();
        let pause = Self {
            reached: Arc::new(std::sync::Mutex::new(Some(reached_tx))),
            go: Arc::new(std::sync::Mutex::new(go_rx)),
        };
        (pause, reached_rx, go_tx)
    }
}

impl Intercept for Pause {
    fn name(&self) -> &'static str {
        "Pause"
    }

    fn read_before_transmit(
        &self, context: &aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents, _: &mut ConfigBag,
    ) -> Result<(), aws_sdk_s3::error::BoxError> {
        let request = context.request();
        if request.method() != "PUT" || !request.uri().contains("/manifest.json") {
            return Ok(());
        }
        if let Some(reached) = self.reached.lock().unwrap().take() {
            reached.send(()).unwrap();
            // Waits on this thread, handing its other tasks to another (the test runs on a
            // runtime of several threads).
            tokio::task::block_in_place(|| self.go.lock().unwrap().recv().unwrap());
        }
        Ok(())
    }
}

/// A new bucket on moto and a client of it, signing as the tests and the local CLI do.
pub struct Bucket {
    pub shared: aws_config::SdkConfig,
    pub client: aws_sdk_s3::Client,
    pub name: String,
    pub endpoint: String,
    /// The conditional writes of `client` that S3 refused.
    pub refusals: Refusals,
}

impl Bucket {
    pub async fn new() -> Self {
        let endpoint = knowledge_test_support::stores::dynamodb_endpoint();
        let shared = knowledge_aws_sdk::sdk_config_loader()
            .endpoint_url(&endpoint)
            .region("us-east-1")
            .credentials_provider(Credentials::new("test", "test", None, None, "test"))
            .load()
            .await;
        let refusals = Refusals::default();
        let config = knowledge_s3::config(&shared).interceptor(refusals.clone());
        let client = aws_sdk_s3::Client::from_conf(config.build());
        let name = format!("knowledge-{}", uuid::Uuid::new_v4().simple());
        client.create_bucket().bucket(&name).send().await.unwrap();
        Self {
            shared,
            client,
            name,
            endpoint,
            refusals,
        }
    }

    /// Another client of the bucket, counting its refusals with the first's, and paused by
    /// `pause`.
    pub fn paused_client(&self, pause: Pause) -> aws_sdk_s3::Client {
        let config = knowledge_s3::config(&self.shared)
            .interceptor(self.refusals.clone())
            .interceptor(pause);
        aws_sdk_s3::Client::from_conf(config.build())
    }

    /// Every key under `prefix`, in order.
    pub async fn keys(&self, prefix: &str) -> Vec<String> {
        let listed = (self.client.list_objects_v2())
            .bucket(&self.name)
            .prefix(prefix)
            .send()
            .await
            .unwrap();
        let mut keys: Vec<String> = (listed.contents().iter())
            .filter_map(|o| o.key().map(str::to_owned))
            .collect();
        keys.sort();
        keys
    }
}
