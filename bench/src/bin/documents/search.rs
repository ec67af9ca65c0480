//! Warm search latency on a built organisation: the core's two-step `Documents::search` for
//! the admin and for the member, against the bare tantivy search of the same open index for
//! the same queries and collections (the baseline), and the same searches over HTTP
//! (`GET /api/search` on the router served in process). Scenarios take turns query by query,
//! so that whatever else the machine does falls on all of them alike.

use std::collections::HashSet;
use std::path::Path;
use std::time::Instant;

use knowledge_bench::KEY;
use knowledge_core::documents::SearchRequest;
use knowledge_core::service::Principal;
use knowledge_http::cookie::{COOKIE_NAME, CookieSigner};

use crate::corpus::{self, Kind, Words};
use crate::org::{People, Service};
use crate::stats::Latencies;
use crate::{QUERIES, SEED};

/// Passages a search asks for: the API's default.
const LIMIT: usize = 10;

#[derive(Clone, Copy, PartialEq)]
enum Who {
    Admin,
    Member,
}

#[derive(Clone, Copy, PartialEq)]
enum Way {
    /// `PassageIndex::search` alone, for the collections the person opens, asking for what
    /// the core asks (twice the limit).
    Bare,
    /// `Documents::search`: groups, collections, the index, the batched store check.
    Core,
    /// `GET /api/search` over loopback: cookie, membership, the core's search, JSON.
    Http,
}

struct Scenario {
    name: &'static str,
    who: Who,
    way: Way,
    all: Latencies,
    by_kind: [Latencies; 3],
    hits: usize,
    /// Distinct documents among the index's candidates: the keys of the core's batched read.
    documents: usize,
}

fn scenario(name: &'static str, who: Who, way: Way) -> Scenario {
    Scenario {
        name,
        who,
        way,
        all: Latencies::default(),
        by_kind: Default::default(),
        hits: 0,
        documents: 0,
    }
}

fn kind_at(kind: Kind) -> usize {
    match kind {
        Kind::Terms => 0,
        Kind::Question => 1,
        Kind::Common => 2,
    }
}

pub async fn run(dir: &Path, reps: usize, http: bool) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let service = Service::open(dir, &base);
    let people = People::read(dir);
    let server = service.service.clone();
    tokio::spawn(async move {
        server
            .serve(listener, Default::default(), std::future::pending())
            .await
    });
    let signer = CookieSigner::new(&KEY).unwrap();
    let cookie = |p: &Principal| {
        format!(
            "{COOKIE_NAME}={}",
            signer.mint(&p.user, &p.org, 3600).unwrap()
        )
    };
    let cookies = [cookie(&people.admin), cookie(&people.member)];
    let client = reqwest::Client::new();
    let words = Words::new(SEED);
    let queries = corpus::queries(&words, SEED, people.documents, QUERIES);
    let all: Vec<&str> = people.collections.iter().map(|c| c.as_str()).collect();
    let members = people.members();
    let members: Vec<&str> = members.iter().map(|c| c.as_str()).collect();

    let mut scenarios = vec![
        scenario(
            "tantivy alone, the admin's 20 collections",
            Who::Admin,
            Way::Bare,
        ),
        scenario(
            "tantivy alone, the member's 10 collections",
            Who::Member,
            Way::Bare,
        ),
        scenario("`Documents::search`, admin", Who::Admin, Way::Core),
        scenario(
            "`Documents::search`, member through a group",
            Who::Member,
            Way::Core,
        ),
    ];
    if http {
        scenarios.push(scenario("`GET /api/search`, admin", Who::Admin, Way::Http));
        scenarios.push(scenario(
            "`GET /api/search`, member",
            Who::Member,
            Way::Http,
        ));
    }
    // The first round warms every path and is not counted.
    for rep in 0..=reps {
        for query in &queries {
            for s in &mut scenarios {
                let (principal, open, cookie) = match s.who {
                    Who::Admin => (&people.admin, &all, &cookies[0]),
                    Who::Member => (&people.member, &members, &cookies[1]),
                };
                let started = Instant::now();
                let (hits, documents) = match s.way {
                    Way::Bare => {
                        let org = people.org.as_str();
                        let found = service.index.search(org, &query.text, open, LIMIT * 2);
                        let found = found.expect("searched");
                        let documents: HashSet<&str> =
                            found.iter().map(|h| h.document.as_str()).collect();
                        (found.len().min(LIMIT), documents.len())
                    }
                    Way::Core => {
                        let request = SearchRequest {
                            query: query.text.clone(),
                            collection: None,
                            limit: LIMIT,
                        };
                        let found = service.documents.search(principal, &request).await;
                        (found.expect("searched").len(), 0)
                    }
                    Way::Http => {
                        let url = reqwest::Url::parse_with_params(
                            &format!("{base}/api/search"),
                            [("q", query.text.as_str())],
                        );
                        let answer = client
                            .get(url.expect("a URL"))
                            .header("cookie", cookie)
                            .send()
                            .await
                            .expect("an answer");
                        assert_eq!(answer.status(), 200);
                        let body: serde_json::Value = answer.json().await.expect("JSON");
                        (body["results"].as_array().map_or(0, Vec::len), 0)
                    }
                };
                let took = started.elapsed();
                if rep > 0 {
                    s.all.push(took);
                    s.by_kind[kind_at(query.kind)].push(took);
                    s.hits += hits;
                    s.documents += documents;
                }
            }
        }
    }

    let count = queries.len();
    println!(
        "{} documents, {count} queries ({} of each kind) × {reps} rounds, limit {LIMIT}\n",
        people.documents,
        count / 3
    );
    println!(
        "| | p50 (ms) | p95 (ms) | p99 (ms) | mean (ms) | hits per search | documents of the candidates |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for s in &scenarios {
        println!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.1} | {} |",
            s.name,
            s.all.ms(0.5),
            s.all.ms(0.95),
            s.all.ms(0.99),
            s.all.mean_ms(),
            s.hits as f64 / s.all.len() as f64,
            match s.way {
                Way::Bare => format!("{:.1}", s.documents as f64 / s.all.len() as f64),
                _ => String::new(),
            }
        );
    }
    println!("\np50 by kind of query (ms):\n");
    println!("| | topic terms | question | common words |");
    println!("|---|---:|---:|---:|");
    for s in &scenarios {
        let k = &s.by_kind;
        println!(
            "| {} | {:.2} | {:.2} | {:.2} |",
            s.name,
            k[0].ms(0.5),
            k[1].ms(0.5),
            k[2].ms(0.5)
        );
    }
    println!("\nexample queries:");
    for kind in [Kind::Terms, Kind::Question, Kind::Common] {
        let q = queries.iter().find(|q| q.kind == kind).unwrap();
        println!("- {}: \"{}\"", kind.name(), q.text);
    }
}
