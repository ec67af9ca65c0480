//! Test doubles of the ports, for the tests of this crate and the crates above it (the
//! `testing` feature): an transient store that passes the same conformance suite as the real
//! adapters and can be told to lose commit races, originals in memory, a workflow engine that records what it is
//! asked, and a clock that tests move forward.

mod index;
mod originals;
mod transient;

use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};

use async_trait::async_trait;

use crate::clock::{Clock, SystemClock, Timestamp};
use crate::ids::{RunId, SessionKey};
use crate::ports::{Workflow, WorkflowError};
use crate::trace::TraceParent;

pub use index::RecordingIndex;
pub use originals::TransientOriginals;
pub use transient::TransientStore;

/// The wall clock shifted by an offset that only grows, so that hour-long windows can be tried
/// without waiting for them while time still flows.
#[derive(Debug, Default)]
pub struct ShiftedClock {
    offset_ms: AtomicI64,
}

impl ShiftedClock {
    pub fn advance(&self, ms: i64) {
        self.offset_ms.fetch_add(ms.max(0), Ordering::SeqCst);
    }
}

impl Clock for ShiftedClock {
    fn now(&self) -> Timestamp {
        SystemClock
            .now()
            .plus_millis(self.offset_ms.load(Ordering::SeqCst))
    }
}

/// A workflow engine that runs nothing and records the runs it was asked to start (with the
/// executions' names) and the cancels it was told of, in order.
#[derive(Debug, Default)]
pub struct RecordingWorkflow {
    pub started: Mutex<Vec<RunId>>,
    pub executions: Mutex<Vec<String>>,
    pub cancelled: Mutex<Vec<RunId>>,
}

#[async_trait]
impl Workflow for RecordingWorkflow {
    async fn start(
        &self, _: &SessionKey, run: &RunId, execution: &str, _: Option<&TraceParent>,
    ) -> Result<(), WorkflowError> {
        self.started.lock().expect("lock").push(run.clone());
        self.executions
            .lock()
            .expect("lock")
            .push(execution.to_owned());
        Ok(())
    }

    async fn cancelled(&self, _: &SessionKey, run: &RunId) {
        self.cancelled.lock().expect("lock").push(run.clone());
    }
}
