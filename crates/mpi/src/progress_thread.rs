//! The optional progress thread (`BRAID_PROGRESS_THREAD=on`): while non-blocking collectives are in
//! flight it keeps advancing them, so that they move while the application computes outside MPI.
//! Every MPI call then takes the state's lock (see `runtime`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::error::MpiResult;

/// How long the thread sleeps when nothing is in flight: short enough that a collective started
/// just after barely waits for it, long enough to cost nothing measurable.
const IDLE_SLEEP: Duration = Duration::from_micros(100);

pub struct ProgressThread {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

impl ProgressThread {
    /// Starts the thread, which calls `advance` (one step of progress under the state's lock:
    /// whether anything was in flight) until stopped or until it fails; the caller has switched
    /// the state's lock on.
    pub fn start(advance: impl Fn() -> MpiResult<bool> + Send + 'static) -> std::io::Result<ProgressThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new().name("braid-progress".into()).spawn(move || run(&flag, advance))?;
        Ok(ProgressThread { stop, handle })
    }

    /// Stops the thread and waits for it to end.
    pub fn stop(self) {
        self.stop.store(true, Ordering::Release);
        let _ = self.handle.join();
    }
}

fn run(stop: &AtomicBool, advance: impl Fn() -> MpiResult<bool>) {
    while !stop.load(Ordering::Acquire) {
        match advance() {
            Ok(true) => std::thread::yield_now(),
            Ok(false) => std::thread::sleep(IDLE_SLEEP),
            // MPI is not running (any more), or the engine failed: the calls of the application
            // report it; this thread only stops advancing.
            Err(_) => return,
        }
    }
}
