//! The engine: progress over the transports, MPI matching (context, source, tag, wildcards,
//! non-overtaking order), the unexpected queue, eager and rendezvous protocols, requests, waiting.
//!
//! This file is the contract the MPI layer codes against. Buffers are `'static` slices: the C ABI
//! builds them from user pointers, and MPI's rules guarantee they stay valid until the request
//! completes.

use std::fmt;

use braid_config::Config;
use braid_pmi::Bootstrap;

/// A request handle: an index into the engine's request table (never 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId(pub u32);

/// Which sender a receive accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Any,
    Rank(u32),
}

/// Which tag a receive accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TagSelector {
    Any,
    Tag(i32),
}

/// MPI's send modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    /// MPI_Send: eager below the threshold, rendezvous above.
    Standard,
    /// MPI_Ssend: completes only once the receive has matched.
    Synchronous,
    /// MPI_Rsend: the receive is known to be posted (sent as Standard).
    Ready,
}

/// What a completed request reports. `source` is a job (world) rank.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Status {
    pub source: u32,
    pub tag: i32,
    /// Bytes received (for a send: bytes sent).
    pub count: usize,
    pub cancelled: bool,
    /// The message was longer than the receive buffer (MPI_ERR_TRUNCATE); `count` is what fit.
    pub truncated: bool,
}

/// An engine failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineError {
    /// A rank this job cannot reach with any transport, with the reason.
    Unreachable { rank: u32, reason: String },
    /// Start-up failed (bootstrap, shared memory, configuration).
    Init(String),
    /// A transport failed while moving data.
    Transport(String),
    /// An unknown or already freed request.
    BadRequest,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineError::Unreachable { rank, reason } => write!(f, "rank {rank} is unreachable: {reason}"),
            EngineError::Init(reason) => write!(f, "initialisation failed: {reason}"),
            EngineError::Transport(reason) => write!(f, "transport failure: {reason}"),
            EngineError::BadRequest => write!(f, "invalid request"),
        }
    }
}

impl std::error::Error for EngineError {}

/// One process's communication engine.
pub struct Engine {
    _private: (),
}

impl Engine {
    /// Wires up every transport through `bootstrap` (collective over the job).
    pub fn new(config: &Config, bootstrap: Box<dyn Bootstrap>) -> Result<Engine, EngineError> {
        let _ = (config, bootstrap);
        todo!("engine construction")
    }

    /// This process's job rank.
    pub fn rank(&self) -> u32 {
        todo!()
    }

    /// Number of ranks in the job.
    pub fn size(&self) -> u32 {
        todo!()
    }

    /// Starts a send of `data` to job rank `dest`. Small messages complete at once.
    pub fn isend(&mut self, data: &'static [u8], dest: u32, tag: i32, context: u32, mode: SendMode) -> Result<RequestId, EngineError> {
        let _ = (data, dest, tag, context, mode);
        todo!()
    }

    /// Starts a receive into `buffer`.
    pub fn irecv(&mut self, buffer: &'static mut [u8], source: Source, tag: TagSelector, context: u32) -> Result<RequestId, EngineError> {
        let _ = (buffer, source, tag, context);
        todo!()
    }

    /// Makes progress once; if `request` is complete, frees it and returns its status.
    pub fn test(&mut self, request: RequestId) -> Result<Option<Status>, EngineError> {
        let _ = request;
        todo!()
    }

    /// Waits (spinning, then blocking per the wait policy) until `request` completes; frees it.
    pub fn wait(&mut self, request: RequestId) -> Result<Status, EngineError> {
        let _ = request;
        todo!()
    }

    /// Whether `request` has completed (no progress is made).
    pub fn is_complete(&self, request: RequestId) -> bool {
        let _ = request;
        todo!()
    }

    /// Makes progress until `done(self)` is true, waiting per the wait policy between polls.
    pub fn wait_until(&mut self, mut done: impl FnMut(&mut Engine) -> bool) -> Result<(), EngineError> {
        let _ = &mut done;
        todo!()
    }

    /// Polls every transport once and advances protocols; true if anything happened.
    pub fn progress(&mut self) -> Result<bool, EngineError> {
        todo!()
    }

    /// MPI_Iprobe: the status of the first matching message not yet received, if any.
    pub fn iprobe(&mut self, source: Source, tag: TagSelector, context: u32) -> Result<Option<Status>, EngineError> {
        let _ = (source, tag, context);
        todo!()
    }

    /// Cancels a receive that has not matched yet; true if it was cancelled.
    pub fn cancel(&mut self, request: RequestId) -> bool {
        let _ = request;
        todo!()
    }

    /// MPI_Request_free: the request completes on its own and is then released.
    pub fn release(&mut self, request: RequestId) {
        let _ = request;
        todo!()
    }

    /// Job ranks on this node, this one included, in rank order.
    pub fn node_ranks(&self) -> &[u32] {
        todo!()
    }

    /// Ends the job: tells the launcher, which kills every rank with `code`.
    pub fn abort(&mut self, code: i32, message: &str) -> ! {
        let _ = (code, message);
        todo!()
    }

    /// Completes outstanding traffic, synchronises with the other ranks and detaches.
    pub fn finalize(self) -> Result<(), EngineError> {
        todo!()
    }
}
