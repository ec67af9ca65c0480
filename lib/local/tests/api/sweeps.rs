//! The sweep of a running service: a run whose in-process execution ended without finishing
//! its turn is found once its lease runs out, given a new execution, and answered, with no
//! one acting; a run whose executions keep ending that way has its turn ended as failed; an
//! upload whose file never came is deleted once it is an hour old.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use knowledge_asl::{TaskError, Tasks};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::domain::{LEASE_MS, MAX_REVIVALS};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::support::{Api, Setup, WAIT, kinds};

/// Step handlers whose executions end right after `LoadTurn` binds the run, as an execution
/// that dies would, the first `DEATHS` times; their count is in `ENDED`.
struct EndsAfterLoad<const DEATHS: usize>(Arc<dyn Tasks>, &'static AtomicUsize);

#[async_trait]
impl<const DEATHS: usize> Tasks for EndsAfterLoad<DEATHS> {
    async fn invoke(
        &self, handler: &str, input: Value, signal: CancellationToken,
    ) -> Result<Value, TaskError> {
        let out = self.0.invoke(handler, input, signal).await?;
        let ended = self.1.load(Ordering::SeqCst);
        if handler == "LoadTurn" && out["next"] == "agent" && ended < DEATHS {
            self.1.fetch_add(1, Ordering::SeqCst);
            return Ok(json!({ "next": "done" }));
        }
        Ok(out)
    }
}

/// A service whose sweep runs every 20 ms, with its step handlers wrapped by `wrap`.
async fn sweeping(wrap: crate::support::WrapTasks) -> Api {
    Api::start_setup(Setup {
        wrap,
        sweep_every: Duration::from_millis(20),
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await
}

/// Moves the service's clock past the lease until `done` holds of the session's events (the
/// sweep runs on its own), within [`WAIT`]. The clock moves only once no execution is in
/// flight: what the sweep must find is an execution that ended, and one that is only slow (its
/// `LoadTurn` on a loaded store) must not see its lease run out while it works. An execution
/// the sweep starts meanwhile sees the clock move once more at most, a tenth of its lease.
async fn swept_until(api: &Api, id: &str, done: impl Fn(&[String]) -> bool) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        tokio::time::timeout_at(deadline, api.svc.workflow.idle())
            .await
            .expect("the executions in flight end");
        let t = api.transcript(id).await.body;
        let seen = kinds(t["events"].as_array().unwrap());
        if t["workflowRunId"].is_null() && done(&seen) {
            return seen;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "never settled: {seen:?}"
        );
        api.clock.advance(LEASE_MS / 10);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_run_whose_execution_ended_without_finishing_is_revived_and_answered_by_the_sweep() {
    static ENDED: AtomicUsize = AtomicUsize::new(0);
    let api = sweeping(|tasks| Arc::new(EndsAfterLoad::<1>(tasks, &ENDED))).await;
    let id = api.create("hello").await;
    api.settle().await;
    assert_eq!(ENDED.load(Ordering::SeqCst), 1);
    let t = api.transcript(&id).await.body;
    assert!(!t["workflowRunId"].is_null(), "the run is left claimed");
    let seen = swept_until(&api, &id, |k| k.last().is_some_and(|l| l == "status_idle")).await;
    assert_eq!(seen, ["user_message", "agent_message", "status_idle"]);
}

#[tokio::test]
async fn a_turn_whose_executions_keep_ending_is_ended_as_failed_by_the_sweep() {
    static ENDED: AtomicUsize = AtomicUsize::new(0);
    const DEATHS: usize = MAX_REVIVALS as usize + 1;
    let api = sweeping(|tasks| Arc::new(EndsAfterLoad::<DEATHS>(tasks, &ENDED))).await;
    let id = api.create("hello").await;
    let seen = swept_until(&api, &id, |k| k.len() > 1).await;
    assert_eq!(seen, ["user_message", "error", "status_idle"]);
    assert_eq!(api.all_events(&id).await[1]["payload"]["code"], "run_died");
    assert_eq!(ENDED.load(Ordering::SeqCst), DEATHS);
    // The session stays usable.
    assert_eq!(api.message(&id, "again").await.status, 200);
    let seen = swept_until(&api, &id, |k| k.len() > 3).await;
    assert_eq!(seen[3..], ["user_message", "agent_message", "status_idle"]);
}

#[tokio::test]
async fn an_upload_whose_file_never_came_is_deleted_by_the_sweep_an_hour_on() {
    let api = Api::start_setup(Setup {
        sweep_every: Duration::from_millis(20),
        documents: true,
        ..Setup::new(Arc::new(BuiltinAgent))
    })
    .await;
    let access = json!({ "kind": "everyone" });
    let body = json!({ "name": "Handbook", "description": "", "access": access });
    let made = api.post("/api/admin/collections", body).await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let path = format!(
        "/api/admin/collections/{}/documents",
        made.body["id"].as_str().unwrap()
    );
    let started = (api.post(&path, json!({ "name": "unsent.md", "bytes": 40 }))).await;
    assert_eq!(started.status, 201, "{:?}", started.body);
    let listed =
        |reply: knowledge_test_support::Reply| reply.body["documents"].as_array().unwrap().len();
    assert_eq!(listed(api.get(&path).await), 1);

    api.clock
        .advance(knowledge_core::documents::UPLOAD_STALE_MS + 1_000);
    let gone = tokio::time::timeout(WAIT, async {
        while listed(api.get(&path).await) > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    gone.await.expect("the sweep deletes it");
    let collections = api.get("/api/admin/collections").await.body;
    assert_eq!(collections["storage"]["usedBytes"], 0, "{collections}");
}
