//! The rig the core's integration tests share: the use cases and the workflow steps over the
//! transient store, with one active organisation and one member of it, a recording workflow
//! port and a clock the tests move forward.

use std::sync::Arc;

use knowledge_core::adapters::agent::BuiltinAgent;
use knowledge_core::adapters::integrations::FixedIntegrations;
use knowledge_core::clock::Clock;
use knowledge_core::domain::{
    Actor, AuditAction, AuditEntry, EventKind, Member, Org, Plan, Role, Session,
};
use knowledge_core::ids::RunId;
use knowledge_core::ids::{OrgId, SessionId, SessionKey, UserId};
use knowledge_core::ports::{DirectoryStore, OrgStore, SessionStore, Store};
use knowledge_core::service::{Deps, Opening, Principal, Service, SignedIn};
use knowledge_core::steps::{
    ExecRef, Failure, Handler, StepInput, StepOutput, StepStores, Steps, TurnRef,
};
use knowledge_core::testing::{RecordingWorkflow, ShiftedClock, TransientStore};

pub struct Rig {
    pub service: Service,
    /// The workflow steps over the same store and clock, with the built-in agent.
    pub steps: Steps,
    pub store: Arc<TransientStore>,
    pub workflow: Arc<RecordingWorkflow>,
    pub clock: Arc<ShiftedClock>,
    pub p: Principal,
    /// The member as their cookie names them.
    pub who: SignedIn,
}

impl Rig {
    /// A service over an empty store, with one active organisation and one member of it; the
    /// agent and integrations only when `opening`.
    pub async fn new(opening: bool) -> Self {
        let store = Arc::new(TransientStore::default());
        let workflow = Arc::new(RecordingWorkflow::default());
        let clock = Arc::new(ShiftedClock::default());
        let now = clock.now();
        let org = OrgId::generate();
        store
            .put_org(&Org::new(org.clone(), "Acme", Plan::Business, now))
            .await
            .unwrap();
        let user = UserId::generate();
        let audit = AuditEntry::new(&org, now, Actor::Admin, AuditAction::MemberAdded, "test");
        store
            .create_member(
                &Member::new(org.clone(), user.clone(), Role::Viewer, now),
                &audit,
            )
            .await
            .unwrap();
        let service = Service::new(Deps {
            store: store.clone(),
            workflow: workflow.clone(),
            clock: clock.clone(),
            opening: opening.then(|| Opening {
                agent: Arc::new(BuiltinAgent),
                integrations: Arc::new(FixedIntegrations::new()),
            }),
        });
        let who = SignedIn {
            user: user.clone(),
            org: org.clone(),
            signed_in_at: now,
        };
        let p = service.authenticate(user, org, now).await.unwrap();
        let stores = StepStores::of(&(store.clone() as Arc<dyn Store>));
        let steps = Steps::new(stores, clock.clone())
            .with_agent(Arc::new(BuiltinAgent))
            .with_integrations(Arc::new(FixedIntegrations::new()));
        Self {
            service,
            steps,
            store,
            workflow,
            clock,
            p,
            who,
        }
    }

    pub fn key(&self, session: &SessionId) -> SessionKey {
        SessionKey {
            user: self.p.user.clone(),
            org: self.p.org.clone(),
            session: session.clone(),
        }
    }

    pub async fn kinds(&self, session: &SessionId) -> Vec<EventKind> {
        let events = self.store.list_events(&self.key(session), 0, 100).await;
        events.unwrap().iter().map(|e| e.kind()).collect()
    }

    /// Ends the session's run as the workflow would after its last turn.
    pub async fn end_run(&self, session: &SessionId) {
        let mut s = self
            .store
            .get_session(&self.key(session))
            .await
            .unwrap()
            .unwrap();
        let expected = s.version;
        s.version += 1;
        s.run_id = None;
        s.pending.clear();
        self.store
            .commit_session(&s, expected, &[], None, None)
            .await
            .unwrap();
    }

    /// The session as stored.
    pub async fn stored(&self, session: &SessionId) -> Session {
        let stored = self.store.get_session(&self.key(session)).await.unwrap();
        stored.expect("the session is stored")
    }

    pub fn cancelled(&self) -> usize {
        self.workflow.cancelled.lock().unwrap().len()
    }
}

/// A session whose first turn waits for its run, over the rig.
pub struct Turn {
    pub rig: Rig,
    pub session: SessionId,
    pub run: RunId,
}

impl Turn {
    pub async fn new() -> Self {
        let rig = Rig::new(true).await;
        let created = rig.service.create_session(&rig.who, "first").await.unwrap();
        Self {
            rig,
            session: created.id,
            run: created.run_id,
        }
    }

    /// An execution of the run that starts now, as Step Functions would describe it.
    pub fn execution(&self, id: &str, name: &str) -> ExecRef {
        ExecRef {
            id: id.into(),
            name: name.into(),
            started_at: self.rig.clock.now(),
        }
    }

    /// Runs `handler` in the execution `exec`, as its Task would.
    pub async fn step(
        &self, handler: Handler, exec: &ExecRef, turn: Option<TurnRef>,
    ) -> StepOutput {
        self.step_after(handler, exec, turn, None).await
    }

    /// The same, after the caught `failure`.
    pub async fn step_after(
        &self, handler: Handler, exec: &ExecRef, turn: Option<TurnRef>, failure: Option<Failure>,
    ) -> StepOutput {
        let input = StepInput {
            turn,
            failure,
            execution: Some(exec.clone()),
            ..StepInput::start(&self.rig.key(&self.session), &self.run, None)
        };
        let out = self.rig.steps.step(handler, &input, std::future::pending());
        out.await.unwrap()
    }
}
