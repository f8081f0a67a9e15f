//! The optional progress thread (`BRAID_PROGRESS_THREAD=on`): while non-blocking collectives are in
//! flight it keeps advancing them, so that they move while the application computes outside MPI.
//! Every MPI call then takes the state's lock (see `runtime`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::runtime;

/// How long the thread sleeps when nothing is in flight: short enough that a collective started
/// just after barely waits for it, long enough to cost nothing measurable.
const IDLE_SLEEP: Duration = Duration::from_micros(100);

pub struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl ProgressThread {
    /// Starts the thread; the caller has switched the state's lock on.
    pub fn start() -> std::io::Result<ProgressThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new().name("braid-progress".into()).spawn(move || run(&flag))?;
        Ok(ProgressThread { stop, handle })
    }

    /// Stops the thread and waits for it to end.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.handle.join();
    }
}

fn run(stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        match runtime::with(|rt| if rt.engine.has_agents() { rt.engine.progress().map(|_| true).map_err(|e| runtime::engine_error(crate::consts::MPI_COMM_WORLD, e)) } else { Ok(false) }) {
            Ok(true) => std::thread::yield_now(),
            Ok(false) => std::thread::sleep(IDLE_SLEEP),
            // MPI is not running (any more), or the engine failed: the calls of the application
            // report it; this thread only stops advancing.
            Err(_) => return,
        }
    }
}
