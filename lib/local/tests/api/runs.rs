//! The run rules of DESIGN.md, driven step by step: the use cases and the workflow steps over the
//! real SQLite store, with a workflow port that only records the runs it is asked to start, so
//! that each interleaving of a race can be forced rather than hoped for. Where a run is driven
//! to its end, the local engine runs the real state machine over the steps.

use std::sync::Arc;

use knowledge_asl::{Execution, Options, TracingObserver};
use knowledge_assembly::operator::Operator;
use knowledge_assembly::workflow::{EXECUTION_ID_PREFIX, agent_machine};
use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::clock::SystemClock;
use knowledge_core::ids::{OrgId, RunId, SessionKey, UserId};
use knowledge_core::ports::{Agent, Integrations};
use knowledge_core::service::{Deps, Opening, Principal, Service, SignedIn};
use knowledge_core::steps::{Handler, Next, StepInput, StepOutput, StepStores, Steps, TurnRef};
use knowledge_core::testing::RecordingWorkflow;
use knowledge_local::{LocalStore, StepTasks};
use tokio_util::sync::CancellationToken;

use crate::support::{PricedAgent, docs, mark_deleting};

struct Rig {
    service: Service,
    steps: Steps,
    store: LocalStore,
    workflow: Arc<RecordingWorkflow>,
    p: Principal,
    /// The member as their cookie names them.
    who: SignedIn,
    _dir: tempfile::TempDir,
}

impl Rig {
    async fn new() -> Self {
        Self::with_agent(Arc::new(BuiltinAgent)).await
    }

    async fn with_agent(agent: Arc<dyn Agent>) -> Self {
        Self::with_parts(agent, Arc::new(FixedIntegrations::new())).await
    }

    async fn with_parts(agent: Arc<dyn Agent>, integrations: Arc<dyn Integrations>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let store = crate::support::open_store(dir.path()).await;
        Operator {
            store: store.shared(),
        }
        .bootstrap()
        .await
        .unwrap();
        let workflow = Arc::new(RecordingWorkflow::default());
        let shared = store.shared();
        let service = Service::new(Deps {
            store: shared.clone(),
            workflow: workflow.clone(),
            clock: Arc::new(SystemClock),
            opening: Some(Opening {
                agent: agent.clone(),
                integrations: integrations.clone(),
            }),
        });
        let steps = Steps::new(StepStores::of(&shared), Arc::new(SystemClock))
            .with_agent(agent)
            .with_integrations(integrations);
        let who = SignedIn {
            user: UserId::parse("usr_default").unwrap(),
            org: OrgId::parse("org_default").unwrap(),
            signed_in_at: knowledge_core::clock::Clock::now(&SystemClock),
        };
        let p = service
            .authenticate(who.user.clone(), who.org.clone(), who.signed_in_at)
            .await
            .unwrap();
        Self {
            service,
            steps,
            store,
            workflow,
            p,
            who,
            _dir: dir,
        }
    }

    fn key(&self, session: &knowledge_core::ids::SessionId) -> SessionKey {
        SessionKey {
            user: self.p.user.clone(),
            org: self.p.org.clone(),
            session: session.clone(),
        }
    }

    fn started(&self) -> Vec<RunId> {
        self.workflow.started.lock().unwrap().clone()
    }

    async fn kinds(&self, key: &SessionKey) -> Vec<&'static str> {
        self.store
            .list_events(key, 0, 1000)
            .await
            .unwrap()
            .iter()
            .map(|e| e.kind().as_str())
            .collect()
    }

    /// Runs one step handler directly, as a Task of the state machine would.
    async fn step(
        &self, handler: Handler, key: &SessionKey, run: &RunId, turn: Option<TurnRef>,
    ) -> StepOutput {
        let input = StepInput {
            turn,
            ..StepInput::start(key, run, None)
        };
        let out = self.steps.step(handler, &input, std::future::pending());
        out.await.unwrap()
    }

    /// Answers the run's turn step by step, up to its `status_idle`, leaving the run to end at
    /// its next `LoadTurn`.
    async fn answer_without_ending(&self, key: &SessionKey, run: &RunId) {
        let loaded = self.step(Handler::LoadTurn, key, run, None).await;
        let answered = self.step(Handler::CallAgent, key, run, loaded.turn).await;
        let finished = self
            .step(Handler::FinishTurn, key, run, answered.turn)
            .await;
        assert_eq!(finished.next, Next::Load);
    }

    /// Runs `run` to its end on the local engine and the real state machine.
    async fn drive(&self, key: &SessionKey, run: &RunId) {
        let started = self.steps.clock().now().to_iso8601();
        agent_machine()
            .unwrap()
            .run(
                &Execution::under(EXECUTION_ID_PREFIX, run.as_str(), started),
                serde_json::to_value(StepInput::start(key, run, None)).unwrap(),
                Arc::new(StepTasks(self.steps.clone())),
                CancellationToken::new(),
                &TracingObserver,
                Options::default(),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn a_message_after_cancel_finishes_the_cancelled_run_itself_when_the_workflow_has_not_yet() {
    let rig = Rig::new().await;
    let created = rig.service.create_session(&rig.who, "one").await.unwrap();
    let key = rig.key(&created.id);
    assert!(!rig.service.cancel(&rig.who, &created.id).await.unwrap());
    rig.service
        .post_message(&rig.who, &created.id, "two")
        .await
        .unwrap();

    assert_eq!(
        rig.kinds(&key).await,
        ["user_message", "status_terminated", "user_message"]
    );
    let started = rig.started();
    assert_eq!(started.len(), 2);
    assert_eq!(started[0], created.run_id);
    let s = rig.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(
        (s.run_id.as_ref(), s.cancelled_at, s.pending.clone()),
        (Some(&started[1]), None, vec![3])
    );

    // The cancelled run, when it finally looks, finds it no longer owns the session.
    let out = rig.step(Handler::LoadTurn, &key, &started[0], None).await;
    assert_eq!(out.next, Next::Done);
    assert_eq!(rig.kinds(&key).await.len(), 3);
    rig.drive(&key, &started[1]).await;
    assert_eq!(
        rig.kinds(&key).await,
        [
            "user_message",
            "status_terminated",
            "user_message",
            "agent_message",
            "status_idle"
        ]
    );
}

#[tokio::test]
async fn a_step_delivered_twice_commits_its_events_once() {
    let rig = Rig::with_agent(Arc::new(PricedAgent { micros: 1_500_000 })).await;
    let created = rig.service.create_session(&rig.who, "one").await.unwrap();
    let key = rig.key(&created.id);
    let run = &created.run_id;
    let loaded = rig.step(Handler::LoadTurn, &key, run, None).await;
    assert_eq!(loaded.next, Next::Agent);
    let first = rig.step(Handler::CallAgent, &key, run, loaded.turn).await;
    let again = rig.step(Handler::CallAgent, &key, run, loaded.turn).await;
    assert_eq!(first.next, Next::Finish);
    assert_eq!(again, first, "the duplicate routes where the first went");
    let finished = rig.step(Handler::FinishTurn, &key, run, first.turn).await;
    let again = rig.step(Handler::FinishTurn, &key, run, first.turn).await;
    assert_eq!(finished.next, Next::Load);
    assert_eq!(again.next, Next::Load);
    // A late duplicate of the agent step, after the turn ended, writes nothing either.
    rig.step(Handler::CallAgent, &key, run, loaded.turn).await;
    assert_eq!(
        rig.kinds(&key).await,
        ["user_message", "agent_message", "status_idle"]
    );
    // The cost was recorded with the answer, once.
    let month = knowledge_core::clock::Clock::now(&SystemClock).month();
    let usage = rig.store.get_usage(&rig.p.org, &month).await.unwrap();
    assert_eq!(usage.cost_micros, 1_500_000);
}

#[tokio::test]
async fn a_late_duplicate_of_an_earlier_step_of_the_same_turn_commits_nothing() {
    let rig = Rig::with_parts(Arc::new(BuiltinAgent), docs()).await;
    let created = rig
        .service
        .create_session(&rig.who, "cancel")
        .await
        .unwrap();
    let key = rig.key(&created.id);
    let run = &created.run_id;
    let loaded = rig.step(Handler::LoadTurn, &key, run, None).await;
    let searched = rig.step(Handler::CallAgent, &key, run, loaded.turn).await;
    assert_eq!(searched.next, Next::Tool);
    let found = rig.step(Handler::RunTool, &key, run, searched.turn).await;
    // The turn waits for the agent again, as it did at step 0; only the marker tells them apart.
    assert_eq!(found.next, Next::Agent);
    let late = rig.step(Handler::CallAgent, &key, run, loaded.turn).await;
    assert_eq!(late, found, "the late copy routes to where the turn stands");
    assert_eq!(
        rig.kinds(&key).await,
        ["user_message", "tool_use", "tool_result"]
    );
}

#[tokio::test]
async fn a_session_marked_for_deletion_is_gone_to_every_writer() {
    let rig = Rig::new().await;
    let created = rig.service.create_session(&rig.who, "one").await.unwrap();
    let key = rig.key(&created.id);
    // The first half of a delete: the tombstone is committed, the rows are still there.
    mark_deleting(&*rig.store, &key).await;

    let gone = |r: Result<(), knowledge_core::CoreError>| {
        assert!(
            matches!(r, Err(knowledge_core::CoreError::NotFound(_))),
            "{r:?}"
        )
    };
    gone(rig.service.post_message(&rig.who, &created.id, "two").await);
    gone(rig.service.cancel(&rig.who, &created.id).await.map(|_| ()));
    gone(
        rig.service
            .transcript(&rig.who, &created.id, None)
            .await
            .map(|_| ()),
    );
    for handler in Handler::ALL {
        let out = rig.step(handler, &key, &created.run_id, None).await;
        assert_eq!(out.next, Next::Done, "{handler:?}");
    }
    assert_eq!(rig.kinds(&key).await, ["user_message"]);
    // A client's retried delete finishes what the first one began; a third finds nothing.
    rig.service.delete(&rig.p, &created.id).await.unwrap();
    assert_eq!(rig.store.rows_for(&key).await.unwrap(), (0, 0));
    gone(rig.service.delete(&rig.p, &created.id).await);
}

#[tokio::test]
async fn deletes_cut_short_are_finished_at_the_next_start_and_their_runs_are_not_resumed() {
    let rig = Rig::new().await;
    let mut cut = Vec::new();
    for text in ["one", "two", "three"] {
        let created = rig.service.create_session(&rig.who, text).await.unwrap();
        cut.push(rig.key(&created.id));
    }
    let kept = rig.service.create_session(&rig.who, "kept").await.unwrap();
    for key in &cut {
        mark_deleting(&*rig.store, key).await;
    }
    let listed = rig.service.list_sessions(&rig.p).await.unwrap();
    assert_eq!(
        listed.iter().map(|s| &s.id).collect::<Vec<_>>(),
        [&kept.id],
        "a session being deleted is not listed"
    );
    if let LocalStore::Sqlite(sqlite) = &rig.store {
        let running = sqlite.running_sessions().await.unwrap();
        assert_eq!(running.len(), 1, "only the kept session's run is resumed");
    }

    assert_eq!(rig.service.finish_deletes().await.unwrap(), 3);
    for key in &cut {
        assert_eq!(rig.store.rows_for(key).await.unwrap(), (0, 0));
    }
    assert_eq!(rig.service.finish_deletes().await.unwrap(), 0);
    let kept = rig.key(&kept.id);
    assert_eq!(rig.store.rows_for(&kept).await.unwrap(), (1, 1));
}

#[tokio::test]
async fn a_cancel_after_the_last_turn_ended_but_before_its_run_ended_changes_nothing() {
    let rig = Rig::new().await;
    let created = rig.service.create_session(&rig.who, "one").await.unwrap();
    let key = rig.key(&created.id);
    let run = &created.run_id;
    rig.answer_without_ending(&key, run).await;
    // status_idle is written; the run still owns the session until its LoadTurn ends it.
    let before = rig.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(before.run_id.as_ref(), Some(run));
    let already = rig.service.cancel(&rig.who, &created.id).await.unwrap();
    assert!(!already, "nothing was cancelled before");
    let after = rig.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!(after, before, "the cancel changed nothing");

    rig.drive(&key, run).await;
    assert_eq!(
        rig.kinds(&key).await,
        ["user_message", "agent_message", "status_idle"]
    );
    let ended = rig.store.get_session(&key).await.unwrap().unwrap();
    assert_eq!((ended.run_id, ended.cancelled_at), (None, None));
    assert_eq!(
        rig.service
            .cancel_all_runs(&rig.p.user, &rig.p.org)
            .await
            .unwrap(),
        0
    );
}

#[tokio::test]
async fn a_message_arriving_as_the_run_ends_is_answered_by_that_run() {
    let rig = Rig::new().await;
    let created = rig.service.create_session(&rig.who, "one").await.unwrap();
    let key = rig.key(&created.id);
    let run = &created.run_id;
    rig.answer_without_ending(&key, run).await;
    // The run has answered everything but not yet ended: the message joins it.
    rig.service
        .post_message(&rig.who, &created.id, "two")
        .await
        .unwrap();
    assert_eq!(rig.started().len(), 1, "no second run");
    rig.drive(&key, &created.run_id).await;
    assert_eq!(
        rig.kinds(&key).await,
        [
            "user_message",
            "agent_message",
            "status_idle",
            "user_message",
            "agent_message",
            "status_idle"
        ]
    );
    assert_eq!(
        rig.store.get_session(&key).await.unwrap().unwrap().run_id,
        None
    );
}

#[tokio::test]
async fn two_concurrent_messages_on_an_idle_session_start_exactly_one_run() {
    let rig = Rig::new().await;
    let created = rig.service.create_session(&rig.who, "one").await.unwrap();
    let key = rig.key(&created.id);
    rig.drive(&key, &created.run_id).await;
    for round in 0..10 {
        let (a, b) = tokio::join!(
            rig.service.post_message(&rig.who, &created.id, "a"),
            rig.service.post_message(&rig.who, &created.id, "b")
        );
        a.unwrap();
        b.unwrap();
        let started = rig.started();
        assert_eq!(started.len(), round + 2, "exactly one new run per round");
        rig.drive(&key, started.last().unwrap()).await;
    }
    let kinds = rig.kinds(&key).await;
    assert_eq!(kinds.iter().filter(|k| **k == "agent_message").count(), 21);
}
