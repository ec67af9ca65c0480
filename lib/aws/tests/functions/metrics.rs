//! The metrics as CloudWatch embedded metric format: a turn driven through the Task functions
//! on moto leaves lines that parse as CloudWatch reads them (the specification's rules checked
//! one by one), with the turn, the model call and the cold start among them, and no member,
//! session or organisation in any dimension.

use std::collections::HashMap;

use knowledge_aws::{Handler, metrics};
use serde_json::Value;

use crate::support::{Deployment, follow_up, step};

/// The units CloudWatch accepts.
const UNITS: &[&str] = &[
    "Seconds",
    "Microseconds",
    "Milliseconds",
    "Bytes",
    "Kilobytes",
    "Megabytes",
    "Gigabytes",
    "Terabytes",
    "Bits",
    "Kilobits",
    "Megabits",
    "Gigabits",
    "Terabits",
    "Percent",
    "Count",
    "Bytes/Second",
    "Kilobytes/Second",
    "Megabytes/Second",
    "Gigabytes/Second",
    "Terabytes/Second",
    "Bits/Second",
    "Kilobits/Second",
    "Megabits/Second",
    "Gigabits/Second",
    "Terabits/Second",
    "Count/Second",
    "None",
];

/// One metric's value in one line: its name, its dimensions and the sum of its values.
#[derive(Debug)]
struct Datum {
    name: String,
    dimensions: HashMap<String, String>,
    sum: f64,
}

/// Reads `line` as CloudWatch reads an embedded metric format document, panicking at the first
/// rule it breaks: a JSON object whose `_aws` holds a millisecond `Timestamp` and
/// `CloudWatchMetrics`, each with a `Namespace`, `Dimensions` (sets of at most 30 names, each a
/// top-level string member) and `Metrics` (at most 100, each named after a top-level number or
/// array of at most 100 numbers, with a known unit).
fn read(line: &str) -> Vec<Datum> {
    let doc: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
    let aws = &doc["_aws"];
    assert!(
        aws["Timestamp"].as_u64().unwrap() > 1_600_000_000_000,
        "{line}"
    );
    let mut data = Vec::new();
    for directive in aws["CloudWatchMetrics"].as_array().unwrap() {
        assert_eq!(directive["Namespace"], metrics::namespace(), "{line}");
        let sets = directive["Dimensions"].as_array().unwrap();
        let metrics = directive["Metrics"].as_array().unwrap();
        assert!(metrics.len() <= 100, "{line}");
        for set in sets {
            let names = set.as_array().unwrap();
            assert!(names.len() <= 30, "{line}");
            let dimensions: HashMap<String, String> = (names.iter())
                .map(|n| {
                    let n = n.as_str().unwrap();
                    let value = doc[n].as_str().unwrap_or_else(|| panic!("{n}: {line}"));
                    assert!((1..=1024).contains(&value.len()), "{n}: {line}");
                    (n.to_owned(), value.to_owned())
                })
                .collect();
            for m in metrics {
                let name = m["Name"].as_str().unwrap();
                if let Some(unit) = m.get("Unit") {
                    assert!(UNITS.contains(&unit.as_str().unwrap()), "{line}");
                }
                let sum = match &doc[name] {
                    Value::Number(n) => n.as_f64().unwrap(),
                    Value::Array(values) => {
                        assert!(values.len() <= 100, "{line}");
                        values.iter().map(|v| v.as_f64().unwrap()).sum()
                    }
                    other => panic!("{name} is {other}: {line}"),
                };
                data.push(Datum {
                    name: name.to_owned(),
                    dimensions: dimensions.clone(),
                    sum,
                });
            }
        }
    }
    data
}

#[tokio::test]
async fn a_turn_through_the_task_functions_leaves_metrics_cloudwatch_reads() {
    knowledge_test_support::skip_without_dynamodb!();
    // The process's recorder: other tests of this binary may record too, so the counts below
    // are at least the turn's.
    metrics::install();
    let d = Deployment::new().await;
    let follow_up = follow_up(&d).await;
    for h in [Handler::LoadTurn, Handler::CallAgent, Handler::FinishTurn] {
        step(&d, h, &follow_up).await;
    }
    let mut out = Vec::new();
    metrics::flush_to(&mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let data: Vec<Datum> = text.lines().flat_map(read).collect();
    let sum = |name: &str, dimension: Option<(&str, &str)>| -> f64 {
        (data.iter())
            .filter(|d| d.name == name)
            .filter(|d| {
                dimension.is_none_or(|(k, v)| d.dimensions.get(k).map(String::as_str) == Some(v))
            })
            .map(|d| d.sum)
            .sum()
    };
    assert!(sum("turns", Some(("outcome", "answered"))) >= 1.0, "{text}");
    assert!(sum("model_calls", Some(("outcome", "ok"))) >= 1.0, "{text}");
    assert!(data.iter().any(|d| d.name == "turn_answer_ms"), "{text}");
    assert_eq!(sum("cold_starts", None), 1.0, "{text}");
    let (key, session) = (&d.key, d.key.session.as_str());
    for id in [session, key.org.as_str(), key.user.as_str()] {
        assert!(!text.contains(id), "{id} in {text}");
    }
    // What was written is not written again.
    let mut again = Vec::new();
    metrics::flush_to(&mut again).unwrap();
    let again = String::from_utf8(again).unwrap();
    assert!(!again.contains("\"cold_starts\""), "{again}");
}
