//! The SDK's HTTP/1.1 client, as `knowledge_aws_sdk::sdk_config_loader` configures it, against
//! servers on loopback that misbehave: a connection closed before any answer and an answer that
//! never comes are failures the SDK retries, as with its own client, and each attempt is
//! bounded by the read timeout the SDK asks for.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use aws_config::Region;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_dynamodb::config::Credentials;
use tokio::net::TcpListener;

const ATTEMPTS: u32 = 3;
const READ_TIMEOUT: Duration = Duration::from_millis(300);

/// A server that accepts connections and closes each at once, or with `hang` holds each open
/// without answering; returns its endpoint and how many connections it accepted.
async fn server(hang: bool) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    tokio::spawn(async move {
        let mut held = vec![];
        loop {
            let (socket, _) = listener.accept().await.unwrap();
            counted.fetch_add(1, Ordering::SeqCst);
            if hang {
                held.push(socket);
            }
        }
    });
    (endpoint, accepted)
}

async fn client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    let config = knowledge_aws_sdk::sdk_config_loader()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .retry_config(
            RetryConfig::standard()
                .with_max_attempts(ATTEMPTS)
                .with_initial_backoff(Duration::from_millis(1)),
        )
        .timeout_config(TimeoutConfig::builder().read_timeout(READ_TIMEOUT).build())
        .load()
        .await;
    aws_sdk_dynamodb::Client::new(&config)
}

#[tokio::test]
async fn a_connection_closed_before_any_answer_is_retried_until_the_attempts_run_out() {
    let (endpoint, accepted) = server(false).await;
    let failed = client(&endpoint).await.list_tables().send().await;
    let error = failed.expect_err("no answer came");
    assert!(
        matches!(error, aws_sdk_dynamodb::error::SdkError::DispatchFailure(_)),
        "{error:?}"
    );
    assert_eq!(accepted.load(Ordering::SeqCst), ATTEMPTS as usize);
}

#[tokio::test]
async fn an_answer_that_never_comes_times_out_each_attempt_and_is_retried() {
    let (endpoint, accepted) = server(true).await;
    let started = Instant::now();
    let failed = client(&endpoint).await.list_tables().send().await;
    let error = failed.expect_err("no answer came");
    let took = started.elapsed();
    match &error {
        aws_sdk_dynamodb::error::SdkError::DispatchFailure(e) => {
            assert!(e.is_timeout(), "{error:?}")
        }
        other => panic!("not a timeout: {other:?}"),
    }
    assert_eq!(accepted.load(Ordering::SeqCst), ATTEMPTS as usize);
    assert!(took >= READ_TIMEOUT * ATTEMPTS, "{took:?}");
    assert!(
        took < READ_TIMEOUT * ATTEMPTS + Duration::from_secs(5),
        "{took:?}"
    );
}
