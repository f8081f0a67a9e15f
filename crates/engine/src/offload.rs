//! Chunk-submission offload (Brunet, Trahay and Denis 2008, equation 1): worker threads, pinned to idle cores, write
//! the chunks of a split rendezvous message into their rails' sockets, so the chunks leave over
//! several rails at once instead of one after another from the rank's own thread. Offloading
//! pays only when the per-chunk submission time outweighs the offload cost T_O (the time from
//! queueing a job to a worker starting it), so both are measured here for the strategy.
//!
//! The queue is a mutex and a condition variable: a job is a whole message's chunks for one
//! rail, not a hot path. An idle worker spins briefly on a lock-free counter, then parks.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use braid_sys::affinity;
use braid_transport::FrameWriter;

/// How long an idle worker watches the queue before it parks.
const SPIN_BEFORE_PARK: Duration = Duration::from_micros(20);
/// Rounds of the offload-cost measurement; the median is kept.
const COST_ROUNDS: usize = 32;
/// How often the cost measurement looks whether every worker has parked.
const PARK_CHECK: Duration = Duration::from_micros(50);
/// Longest wait for the workers to park, or for one to start a probe, in one measurement round.
const MEASURE_WAIT_MAX: Duration = Duration::from_secs(1);
/// Size of the buffer copied to measure the copy rate.
const COPY_PROBE_BYTES: usize = 1 << 20;
/// Timed copies of it (after one untimed); the median is kept.
const COPY_ROUNDS: usize = 8;

/// Worker threads that submit chunks; dropping it stops and joins them.
pub(crate) struct Offload {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
    cost_ns: f64,
    copy_ns_per_byte: f64,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
    /// Jobs in the queue, for spinning workers to watch without the lock.
    queued: AtomicUsize,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Work>,
    /// Workers waiting on `wake`.
    parked: usize,
    stopping: bool,
}

enum Work {
    Frames {
        writer: Box<dyn FrameWriter>,
        frames: Vec<(Vec<u8>, &'static [u8])>,
        job: Arc<OffloadJob>,
    },
    /// A cost-measurement job: the worker records when it started it.
    Probe(Arc<OnceLock<Instant>>),
}

/// The progress of one submitted job, shared with the worker that runs it.
#[derive(Debug, Default)]
pub(crate) struct OffloadJob {
    posted: AtomicUsize,
    finished: AtomicBool,
    failed: AtomicBool,
}

impl OffloadJob {
    /// Payload bytes of the frames written so far.
    pub(crate) fn posted(&self) -> usize {
        self.posted.load(Ordering::Acquire)
    }

    /// The job ended and its writer was dropped (the peer is back with its transport).
    pub(crate) fn finished(&self) -> bool {
        self.finished.load(Ordering::Acquire)
    }

    /// A write failed (or the job was abandoned); frames after the failed one were not written.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }
}

/// Ends a job however it ends (a panicking writer included): drops the writer first, so the peer
/// is given back before `finished` is seen.
struct Completion {
    job: Arc<OffloadJob>,
    writer: Option<Box<dyn FrameWriter>>,
    succeeded: bool,
}

impl Drop for Completion {
    fn drop(&mut self) {
        drop(self.writer.take());
        if !self.succeeded {
            self.job.failed.store(true, Ordering::Release);
        }
        self.job.finished.store(true, Ordering::Release);
    }
}

impl Offload {
    /// Starts `workers` threads (0: `None`), each pinned to one of `idle_cpus` in turn when the
    /// list is not empty, and measures T_O unless `cost_ns` gives it.
    pub(crate) fn start(workers: usize, idle_cpus: &[usize], cost_ns: Option<u64>) -> Option<Offload> {
        let shared = Arc::new(Shared { queue: Mutex::new(Queue::default()), wake: Condvar::new(), queued: AtomicUsize::new(0) });
        let mut offload = Offload { shared, workers: Vec::with_capacity(workers), cost_ns: 0.0, copy_ns_per_byte: 0.0 };
        for index in 0..workers {
            let shared = Arc::clone(&offload.shared);
            let cpu = (!idle_cpus.is_empty()).then(|| idle_cpus[index % idle_cpus.len()]);
            let spawned = std::thread::Builder::new().name(format!("braid-offload-{index}")).spawn(move || {
                if let Some(cpu) = cpu {
                    // An unpinned worker is slower to reach, not wrong.
                    let _ = affinity::set_calling_thread(&[cpu]);
                }
                work(&shared);
            });
            match spawned {
                Ok(handle) => offload.workers.push(handle),
                Err(_) => break,
            }
        }
        if offload.workers.is_empty() {
            return None;
        }
        offload.cost_ns = match cost_ns {
            Some(given) => given as f64,
            None => offload.measure_cost(),
        };
        offload.copy_ns_per_byte = measure_copy_ns_per_byte();
        Some(offload)
    }

    /// T_O: from queueing a job to a parked worker starting it, in nanoseconds.
    pub(crate) fn cost_ns(&self) -> f64 {
        self.cost_ns
    }

    /// Time to submit a chunk of `bytes` from one thread: the kernel's copy into the socket
    /// buffer costs about what a memcpy of that size does.
    pub(crate) fn copy_time_ns(&self, bytes: usize) -> f64 {
        bytes as f64 * self.copy_ns_per_byte
    }

    /// Queues a job: a worker writes `frames` (header, payload) in order through `writer`, adding
    /// each frame's payload length to the job's `posted` bytes, then drops the writer.
    pub(crate) fn submit(&self, writer: Box<dyn FrameWriter>, frames: Vec<(Vec<u8>, &'static [u8])>) -> Arc<OffloadJob> {
        let job = Arc::new(OffloadJob::default());
        self.shared.push(Work::Frames { writer, frames, job: Arc::clone(&job) });
        job
    }

    /// Median over rounds of the wake-up of a parked worker: the usual case, since jobs come one
    /// message at a time and workers park between messages.
    fn measure_cost(&self) -> f64 {
        let mut samples = Vec::with_capacity(COST_ROUNDS);
        for _ in 0..COST_ROUNDS {
            self.wait_until_parked();
            let probe = Arc::new(OnceLock::new());
            let submitted = Instant::now();
            self.shared.push(Work::Probe(Arc::clone(&probe)));
            let give_up = submitted + MEASURE_WAIT_MAX;
            let started = loop {
                if let Some(&started) = probe.get() {
                    break started;
                }
                if Instant::now() > give_up {
                    break give_up;
                }
                std::thread::yield_now();
            };
            samples.push(started.saturating_duration_since(submitted).as_nanos() as f64);
        }
        median(&mut samples)
    }

    fn wait_until_parked(&self) {
        let give_up = Instant::now() + MEASURE_WAIT_MAX;
        while self.shared.lock().parked < self.workers.len() && Instant::now() < give_up {
            std::thread::sleep(PARK_CHECK);
        }
    }
}

impl Drop for Offload {
    fn drop(&mut self) {
        let abandoned = {
            let mut queue = self.shared.lock();
            queue.stopping = true;
            self.shared.queued.store(0, Ordering::Relaxed);
            std::mem::take(&mut queue.jobs)
        };
        self.shared.wake.notify_all();
        for work in abandoned {
            if let Work::Frames { writer, job, .. } = work {
                drop(Completion { job, writer: Some(writer), succeeded: false });
            }
        }
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, work: Work) {
        let mut queue = self.lock();
        queue.jobs.push_back(work);
        self.queued.fetch_add(1, Ordering::Relaxed);
        let wake = queue.parked > 0;
        drop(queue);
        if wake {
            self.wake.notify_one();
        }
    }

    /// The next job, or `None` once the offload stops.
    fn next(&self) -> Option<Work> {
        let spin_until = Instant::now() + SPIN_BEFORE_PARK;
        while self.queued.load(Ordering::Relaxed) == 0 && Instant::now() < spin_until {
            std::hint::spin_loop();
        }
        let mut queue = self.lock();
        loop {
            if queue.stopping {
                return None;
            }
            if let Some(work) = queue.jobs.pop_front() {
                self.queued.fetch_sub(1, Ordering::Relaxed);
                return Some(work);
            }
            queue.parked += 1;
            queue = self.wake.wait(queue).unwrap_or_else(PoisonError::into_inner);
            queue.parked -= 1;
        }
    }
}

fn work(shared: &Shared) {
    while let Some(work) = shared.next() {
        match work {
            Work::Probe(started) => {
                let _ = started.set(Instant::now());
            }
            Work::Frames { writer, frames, job } => write_frames(Completion { job, writer: Some(writer), succeeded: false }, &frames),
        }
    }
}

fn write_frames(mut completion: Completion, frames: &[(Vec<u8>, &'static [u8])]) {
    let Some(writer) = completion.writer.as_mut() else { return };
    for (header, payload) in frames {
        if writer.write_frame(header, &[IoSlice::new(payload)]).is_err() {
            return;
        }
        completion.job.posted.fetch_add(payload.len(), Ordering::Release);
    }
    completion.succeeded = true;
}

/// Nanoseconds per byte of a memcpy of [`COPY_PROBE_BYTES`].
fn measure_copy_ns_per_byte() -> f64 {
    let source = vec![1u8; COPY_PROBE_BYTES];
    let mut target = vec![2u8; COPY_PROBE_BYTES];
    target.copy_from_slice(&source);
    let mut samples = Vec::with_capacity(COPY_ROUNDS);
    for _ in 0..COPY_ROUNDS {
        let start = Instant::now();
        std::hint::black_box(&mut target).copy_from_slice(std::hint::black_box(&source));
        samples.push(start.elapsed().as_nanos() as f64);
    }
    median(&mut samples) / COPY_PROBE_BYTES as f64
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_transport::TransportError;
    use std::sync::mpsc;

    const DEADLINE: Duration = Duration::from_secs(10);

    /// Frames a [`Recorder`] took: (header, payload).
    type Written = Arc<Mutex<Vec<(Vec<u8>, Vec<u8>)>>>;

    /// Records the frames written through it; fails the write of frame `fail_at`; marks itself
    /// dropped.
    struct Recorder {
        frames: Written,
        fail_at: Option<usize>,
        dropped: Arc<AtomicBool>,
    }

    impl FrameWriter for Recorder {
        fn write_frame(&mut self, header: &[u8], payload: &[IoSlice<'_>]) -> Result<(), TransportError> {
            let mut frames = self.frames.lock().unwrap();
            if Some(frames.len()) == self.fail_at {
                return Err(TransportError::Unreachable(1));
            }
            frames.push((header.to_vec(), payload.iter().flat_map(|slice| slice.iter().copied()).collect()));
            Ok(())
        }
    }

    impl Drop for Recorder {
        fn drop(&mut self) {
            self.dropped.store(true, Ordering::Release);
        }
    }

    fn recorder(fail_at: Option<usize>) -> (Box<Recorder>, Written, Arc<AtomicBool>) {
        let (frames, dropped) = (Arc::new(Mutex::new(Vec::new())), Arc::new(AtomicBool::new(false)));
        (Box::new(Recorder { frames: Arc::clone(&frames), fail_at, dropped: Arc::clone(&dropped) }), frames, dropped)
    }

    fn leaked(len: usize, seed: u8) -> &'static [u8] {
        Box::leak((0..len).map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed)).collect::<Vec<u8>>().into_boxed_slice())
    }

    fn wait_finished(job: &OffloadJob) {
        let deadline = Instant::now() + DEADLINE;
        while !job.finished() {
            assert!(Instant::now() < deadline, "the job did not finish");
            std::thread::yield_now();
        }
    }

    #[test]
    fn the_cost_and_the_copy_time_are_measured_or_given() {
        assert!(Offload::start(0, &[], None).is_none());
        let cpus = affinity::calling_thread().unwrap();
        let offload = Offload::start(2, &cpus, None).unwrap();
        assert!(offload.cost_ns() > 0.0 && offload.cost_ns() < MEASURE_WAIT_MAX.as_nanos() as f64, "T_O = {} ns", offload.cost_ns());
        let one = offload.copy_time_ns(1 << 20);
        assert!(one > 0.0);
        assert!((offload.copy_time_ns(4 << 20) - 4.0 * one).abs() < 1e-6 * one, "linear in the size");
        assert_eq!(Offload::start(1, &[], Some(3_000)).unwrap().cost_ns(), 3_000.0);
    }

    #[test]
    fn a_job_writes_every_frame_in_order_and_reports_its_progress() {
        let offload = Offload::start(2, &[], Some(1_000)).unwrap();
        let (writer, written, dropped) = recorder(None);
        let frames: Vec<(Vec<u8>, &'static [u8])> = (0..5u8).map(|seq| (vec![seq; 3], leaked(1000 + seq as usize * 333, seq))).collect();
        let total: usize = frames.iter().map(|(_, payload)| payload.len()).sum();
        let job = offload.submit(writer, frames.clone());
        wait_finished(&job);
        assert!(dropped.load(Ordering::Acquire), "the writer is given back before the job reads finished");
        assert!(!job.failed());
        assert_eq!(job.posted(), total);
        let expected: Vec<(Vec<u8>, Vec<u8>)> = frames.into_iter().map(|(header, payload)| (header, payload.to_vec())).collect();
        assert_eq!(*written.lock().unwrap(), expected);
    }

    #[test]
    fn a_failing_writer_fails_the_job_after_the_frames_it_wrote() {
        let offload = Offload::start(1, &[], Some(1_000)).unwrap();
        let (writer, written, dropped) = recorder(Some(2));
        let frames: Vec<(Vec<u8>, &'static [u8])> = (0..4u8).map(|seq| (vec![seq], leaked(100, seq))).collect();
        let job = offload.submit(writer, frames);
        wait_finished(&job);
        assert!(job.failed() && dropped.load(Ordering::Acquire));
        assert_eq!(job.posted(), 200);
        assert_eq!(written.lock().unwrap().len(), 2);
    }

    /// A writer that waits for a signal before its first frame keeps the only worker busy.
    struct Gate {
        started: mpsc::Sender<()>,
        open: mpsc::Receiver<()>,
    }

    impl FrameWriter for Gate {
        fn write_frame(&mut self, _: &[u8], _: &[IoSlice<'_>]) -> Result<(), TransportError> {
            let _ = self.started.send(());
            self.open.recv().map_err(|_| TransportError::Unreachable(1))
        }
    }

    #[test]
    fn dropping_the_offload_fails_queued_jobs_finishes_the_running_one_and_joins() {
        let offload = Offload::start(1, &[], Some(1_000)).unwrap();
        let shared = Arc::clone(&offload.shared);
        let (started, started_seen) = mpsc::channel();
        let (open, opened) = mpsc::channel();
        let running = offload.submit(Box::new(Gate { started, open: opened }), vec![(vec![1], leaked(10, 1))]);
        started_seen.recv_timeout(DEADLINE).expect("the worker started the first job");
        let (writer, written, dropped) = recorder(None);
        let queued = offload.submit(writer, vec![(vec![2], leaked(10, 2))]);
        let dropper = std::thread::spawn(move || drop(offload));
        let deadline = Instant::now() + DEADLINE;
        while !queued.finished() {
            assert!(Instant::now() < deadline, "the queued job was not abandoned");
            std::thread::yield_now();
        }
        assert!(queued.failed() && dropped.load(Ordering::Acquire), "a job not started is abandoned");
        assert!(!running.finished());
        assert!(written.lock().unwrap().is_empty());
        open.send(()).unwrap();
        dropper.join().unwrap();
        assert!(running.finished() && !running.failed(), "the running job completes");
        assert_eq!(running.posted(), 10);
        assert_eq!(Arc::strong_count(&shared), 1, "the workers ended");
    }
}
