//! [`Agreement`]: the library's own collective steps among a communicator's members (agreeing on a
//! new communicator), run to their end on its collective context with the collective algorithms.

use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;

use super::CommShared;
use crate::coll::abi::run_in_steps;
use crate::coll::drive::{self, Route};
use crate::coll::port::Port;
use crate::coll::CollTuning;
use crate::consts::*;
use crate::error::{error, MpiResult};
use crate::runtime::{self, engine_error};

/// The tag of the exchange between an intercommunicator's two leaders: above every collective's
/// tag (which stay below 2^30) and apart from the agreement tags (negative).
pub(crate) const LEADER_TAG: i32 = 0x4000_0000;

/// Collective steps among the members of `shared`, under the communicator's next collective tag
/// or a tag of their own.
pub(crate) struct Agreement {
    shared: Arc<CommShared>,
    tuning: CollTuning,
    tag: Option<i32>,
}

impl Agreement {
    /// Steps every member takes, under the communicator's next collective tag.
    pub fn new(shared: Arc<CommShared>, tuning: CollTuning) -> Agreement {
        Agreement { shared, tuning, tag: None }
    }

    /// Steps under `tag`: for steps that only some members take (the group of
    /// MPI_Comm_create_group, an intercommunicator's leaders).
    pub fn with_tag(shared: Arc<CommShared>, tuning: CollTuning, tag: i32) -> Agreement {
        Agreement { shared, tuning, tag: Some(tag) }
    }

    pub fn size(&self) -> usize {
        self.shared.size()
    }

    /// Runs the algorithm `build` makes over a port of this group to its end; failures are
    /// reported on `comm`.
    pub fn run<F: Future<Output = Result<(), i32>>>(&self, comm: MPI_Comm, build: impl FnOnce(Rc<Port>) -> F) -> MpiResult<()> {
        self.run_for(comm, "the members could not agree on the new communicator", build)
    }

    /// [`Agreement::run`], with `failure` saying what a failure means.
    pub fn run_for<F: Future<Output = Result<(), i32>>>(&self, comm: MPI_Comm, failure: &str, build: impl FnOnce(Rc<Port>) -> F) -> MpiResult<()> {
        let port = Rc::new(Port::new(self.shared.rank as usize, self.shared.size(), self.tuning));
        let mut schedule = pin!(build(port.clone()));
        let tag = self.tag.unwrap_or_else(|| self.shared.next_coll_tag());
        let route = Route::new(self.shared.clone(), tag);
        let failed = |class| error(comm, class, failure);
        if runtime::is_locking() {
            return run_in_steps(comm, port, route, schedule.as_mut())?.map_err(failed);
        }
        runtime::with(|rt| {
            let mut spare = drive::Spare::default();
            drive::run_blocking(&mut rt.engine, &mut spare, port, route, schedule.as_mut()).map_err(|e| engine_error(comm, e))
        })?
        .map_err(failed)
    }
}
