//! Resuming the runs a stopped process was executing: each gets a new execution.

use crate::error::CoreError;
use crate::ids::SessionKey;
use crate::ports::StoreError;

use super::{MAX_COMMIT_ATTEMPTS, Service};

impl Service {
    /// Starts a new execution for the session's active run, for when every execution of it is
    /// known to be dead (the process that ran them stopped): the claim names the new execution
    /// in a version-checked commit, so an execution of the dead process, had one survived,
    /// would find the run no longer its own. Returns whether a run was resumed: `false` when
    /// the session has no run any more, is being deleted, or is gone.
    pub async fn resume_run(&self, key: &SessionKey) -> Result<bool, CoreError> {
        for _ in 0..MAX_COMMIT_ATTEMPTS {
            let Some(current) = self.deps.store.get_session(key).await? else {
                return Ok(false);
            };
            let (Some(run), false) = (current.run_id.clone(), current.deleting) else {
                return Ok(false);
            };
            let mut next = current.clone();
            let execution = next
                .reassign(self.now())
                .expect("a session with a run can be reassigned");
            next.version += 1;
            match (self.deps.store)
                .commit_session(&next, current.version, &[], None, None)
                .await
            {
                Ok(()) => {
                    self.deps.workflow.start(key, &run, &execution).await?;
                    return Ok(true);
                }
                Err(StoreError::Conflict) => {}
                Err(StoreError::Gone) => return Ok(false),
                Err(e) => return Err(e.into()),
            }
        }
        Err(CoreError::internal("resuming the run stayed contended"))
    }
}
