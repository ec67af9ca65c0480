//! Cold start of the Lambda function binaries, measured locally: each binary is started as
//! Lambda starts it (the Runtime API's address and the function's environment), and its init
//! lasts from process start until it asks the Runtime API for its first event. Endpoint
//! functions read the signing key from Secrets Manager during init; here that is moto on
//! loopback, so the figure holds one local round trip where AWS has one to Secrets Manager.
//!
//! With `EMBEDDING_MODEL_DIR` set, the functions that search and index load the embedding model
//! from that folder during init, as they do from the layer on AWS.
//!
//! Usage: cold-start ENDPOINT DIR [RUNS]
//!   ENDPOINT  moto's URL (`.venv/bin/python scripts/moto_server.py 127.0.0.1 5599`)
//!   DIR       the folder of built function binaries (`target/lambda`)
//!   RUNS      starts per binary (default 20)

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use tokio::sync::Notify;

/// A Runtime API that signals the first `next` request and never hands out an event.
async fn runtime_api() -> (String, Arc<Notify>) {
    let asked = Arc::new(Notify::new());
    let signal = asked.clone();
    let app = Router::new().route(
        "/2018-06-01/runtime/invocation/next",
        get(move || {
            let signal = signal.clone();
            async move {
                signal.notify_one();
                std::future::pending::<()>().await
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (address, asked)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (endpoint, dir) = match (args.get(1), args.get(2)) {
        (Some(e), Some(d)) => (e.clone(), Path::new(d).to_owned()),
        _ => {
            eprintln!("usage: cold-start ENDPOINT DIR [RUNS]");
            std::process::exit(2);
        }
    };
    let runs: usize = args.get(3).map_or(20, |r| r.parse().unwrap());
    let shared = knowledge_aws_sdk::sdk_config_loader()
        .endpoint_url(&endpoint)
        .region("us-east-1")
        .credentials_provider(aws_sdk_secretsmanager::config::Credentials::new(
            "bench", "bench", None, None, "bench",
        ))
        .load()
        .await;
    let secret = aws_sdk_secretsmanager::Client::new(&shared)
        .create_secret()
        .name(format!("cold-start-{}", std::process::id()))
        .secret_string("2a".repeat(32))
        .send()
        .await
        .unwrap();
    let secret_arn = secret.arn().unwrap().to_owned();

    println!("| function | size (MB) | init p50 (ms) | init p90 (ms) | init max (ms) |");
    println!("|---|---|---|---|---|");
    for name in knowledge_assembly::functions::ALL.map(|f| f.name) {
        let binary = dir.join(name);
        let Ok(meta) = std::fs::metadata(&binary) else {
            eprintln!("{} not built; skipped", binary.display());
            continue;
        };
        let mut times = Vec::with_capacity(runs);
        for _ in 0..runs {
            let (api, asked) = runtime_api().await;
            let started = Instant::now();
            let mut child = tokio::process::Command::new(&binary)
                .env_clear()
                .env("AWS_LAMBDA_RUNTIME_API", &api)
                .env("AWS_LAMBDA_FUNCTION_NAME", name)
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
                .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
                .env("AWS_LAMBDA_LOG_FORMAT", "JSON")
                .env("AWS_REGION", "us-east-1")
                .env("AWS_ACCESS_KEY_ID", "bench")
                .env("AWS_SECRET_ACCESS_KEY", "bench")
                .env("AWS_ENDPOINT_URL", &endpoint)
                .env("TABLE_NAME", "cold-start")
                .env("APP_ORIGIN", "https://app.example.com")
                .env("SIGNING_KEY_SECRET_ARN", &secret_arn)
                // The documents' functions need their bucket named (never reached during init);
                // with EMBEDDING_MODEL_DIR in the bench's environment (the folder the model is
                // kept in, as the layer's /opt/models), they load the model as on AWS.
                .env("DOCUMENTS_BUCKET", "cold-start")
                .envs(std::env::var("EMBEDDING_MODEL_DIR").map(|d| ("EMBEDDING_MODEL_DIR", d)))
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
            tokio::select! {
                () = asked.notified() => times.push(started.elapsed().as_secs_f64() * 1000.0),
                status = child.wait() => panic!("{name} exited during init: {status:?}"),
                () = tokio::time::sleep(Duration::from_secs(10)) => panic!("{name}: no request in 10 s"),
            }
            child.kill().await.unwrap();
        }
        times.sort_by(f64::total_cmp);
        println!(
            "| {name} | {:.1} | {:.1} | {:.1} | {:.1} |",
            meta.len() as f64 / 1_048_576.0,
            percentile(&times, 0.5),
            percentile(&times, 0.9),
            times[times.len() - 1],
        );
    }
}
