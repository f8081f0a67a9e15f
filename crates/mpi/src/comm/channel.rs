//! [`CommChannel`]: point-to-point on a communicator's collective context, the channel the
//! collectives (and the agreements that create communicators) run on.

use std::sync::Arc;

use braid_engine::{RequestId, SendMode, Source, TagSelector};

use super::CommShared;
use crate::coll::{CollChannel, CollTuning};
use crate::consts::*;
use crate::error::{error, MpiResult};
use crate::runtime::{self, engine_error};

/// The tag of every collective message (collectives have their own context, and the order of
/// messages between two ranks is preserved, so one tag is enough).
pub(crate) const COLL_TAG: i32 = 0;

/// Point-to-point on a communicator's collective context. Ranks are the ranks point-to-point
/// calls name: the communicator's own, or on an intercommunicator the remote group's (while
/// `rank` and `size` are the local group's).
pub struct CommChannel {
    shared: Arc<CommShared>,
    tuning: CollTuning,
    tag: i32,
}

impl CommChannel {
    pub fn new(shared: Arc<CommShared>, tuning: CollTuning) -> CommChannel {
        CommChannel { shared, tuning, tag: COLL_TAG }
    }

    /// A channel whose messages carry `tag` instead of the collectives' tag: internal exchanges
    /// that may run beside a collective of the same communicator (the tag keeps them apart).
    pub fn with_tag(shared: Arc<CommShared>, tuning: CollTuning, tag: i32) -> CommChannel {
        CommChannel { shared, tuning, tag }
    }

    fn peer(&self, rank: usize) -> Result<u32, i32> {
        if rank < self.shared.peer_count() {
            Ok(self.shared.job_rank(rank as u32))
        } else {
            Err(MPI_ERR_RANK)
        }
    }
}

/// The channel the collectives of `comm` run on (collectives on intercommunicators are not
/// implemented yet: MPI_ERR_COMM).
pub fn coll_channel(comm: MPI_Comm) -> MpiResult<CommChannel> {
    runtime::with(|rt| {
        let shared = &rt.comms.get(comm)?.shared;
        if shared.is_inter() {
            return Err(error(comm, MPI_ERR_COMM, "collective operations on intercommunicators are not supported yet"));
        }
        Ok(CommChannel::new(shared.clone(), rt.tuning))
    })
}

/// Lends `data` to the engine as 'static.
///
/// # Safety
/// The caller waits for the engine request that uses the slice before `data`'s borrow ends.
unsafe fn lend(data: &[u8]) -> &'static [u8] {
    // SAFETY: same pointer and length; the caller keeps the memory alive until the engine is done.
    unsafe { std::slice::from_raw_parts(data.as_ptr(), data.len()) }
}

/// Lends `buffer` to the engine as 'static.
///
/// # Safety
/// As for [`lend`].
unsafe fn lend_mut(buffer: &mut [u8]) -> &'static mut [u8] {
    // SAFETY: same pointer and length; exclusive for the duration of the request.
    unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr(), buffer.len()) }
}

fn channel_failure(e: braid_engine::EngineError) -> i32 {
    engine_error(MPI_COMM_WORLD, e).class
}

impl CollChannel for CommChannel {
    fn rank(&self) -> usize {
        self.shared.rank as usize
    }

    fn size(&self) -> usize {
        self.shared.size()
    }

    fn send(&mut self, dest: usize, data: &[u8]) -> Result<(), i32> {
        let job = self.peer(dest)?;
        let context = self.shared.coll_context;
        runtime::with(|rt| {
            // A small message the transport takes at once needs no request.
            match rt.engine.try_send_now(data, job, self.tag, context) {
                Ok(true) => return Ok(Ok(())),
                Ok(false) => {}
                Err(e) => return Ok(Err(channel_failure(e))),
            }
            // SAFETY: the request is waited for before this function returns.
            let request = rt.engine.isend(unsafe { lend(data) }, job, self.tag, context, SendMode::Standard);
            Ok(request.and_then(|id| rt.engine.wait(id)).map(|_| ()).map_err(channel_failure))
        })
        .map_err(|e| e.class)?
    }

    fn recv(&mut self, source: usize, buffer: &mut [u8]) -> Result<(), i32> {
        let job = self.peer(source)?;
        let context = self.shared.coll_context;
        runtime::with(|rt| {
            // SAFETY: the request is waited for before this function returns.
            let request = rt.engine.irecv(unsafe { lend_mut(buffer) }, Source::Rank(job), TagSelector::Tag(self.tag), context);
            Ok(request.and_then(|id| rt.engine.wait(id)).map_err(channel_failure).and_then(check_truncation))
        })
        .map_err(|e| e.class)?
    }

    fn sendrecv(&mut self, dest: usize, data: &[u8], source: usize, buffer: &mut [u8]) -> Result<(), i32> {
        let to = self.peer(dest)?;
        let from = self.peer(source)?;
        let context = self.shared.coll_context;
        runtime::with(|rt| {
            let engine = &mut rt.engine;
            let mut exchange = || -> Result<(RequestId, Option<RequestId>), braid_engine::EngineError> {
                // SAFETY: both requests are waited for before this function returns.
                let receive = engine.irecv(unsafe { lend_mut(buffer) }, Source::Rank(from), TagSelector::Tag(self.tag), context)?;
                // A small message the transport takes at once needs no send request.
                if engine.try_send_now(data, to, self.tag, context)? {
                    return Ok((receive, None));
                }
                // SAFETY: as above.
                let send = engine.isend(unsafe { lend(data) }, to, self.tag, context, SendMode::Standard)?;
                Ok((receive, Some(send)))
            };
            let outcome = exchange().and_then(|(receive, send)| {
                let received = engine.wait(receive)?;
                if let Some(send) = send {
                    engine.wait(send)?;
                }
                Ok(received)
            });
            Ok(outcome.map_err(channel_failure).and_then(check_truncation))
        })
        .map_err(|e| e.class)?
    }

    fn exchange_all(&mut self, data: &[u8], all: &mut [u8]) -> Result<(), i32> {
        let (rank, size, len) = (self.rank(), self.size(), data.len());
        if size > EXCHANGE_ALL_MAX || all.len() != len * size {
            return crate::coll::pairwise_exchange_all(self, data, all);
        }
        let mut peers = [0u32; EXCHANGE_ALL_MAX];
        for (index, peer) in peers[..size].iter_mut().enumerate() {
            *peer = self.peer(index)?;
        }
        let context = self.shared.coll_context;
        runtime::with(|rt| {
            let engine = &mut rt.engine;
            let mut receives = [None; EXCHANGE_ALL_MAX];
            let mut sends = [None; EXCHANGE_ALL_MAX];
            let mut exchange = || -> Result<bool, braid_engine::EngineError> {
                for (source, block) in all.chunks_exact_mut(len.max(1)).enumerate().filter(|&(source, _)| source != rank) {
                    // SAFETY: every request is waited for before this function returns, and the
                    // blocks are disjoint.
                    let request = engine.irecv(unsafe { lend_mut(block) }, Source::Rank(peers[source]), TagSelector::Tag(self.tag), context)?;
                    receives[source] = Some(request);
                }
                if len == 0 {
                    for (source, slot) in receives[..size].iter_mut().enumerate().filter(|&(source, _)| source != rank) {
                        // SAFETY: as above; an empty buffer is never written.
                        *slot = Some(engine.irecv(unsafe { lend_mut(&mut []) }, Source::Rank(peers[source]), TagSelector::Tag(self.tag), context)?);
                    }
                }
                for step in 1..size {
                    let dest = (rank + step) % size;
                    if !engine.try_send_now(data, peers[dest], self.tag, context)? {
                        // SAFETY: as above.
                        sends[dest] = Some(engine.isend(unsafe { lend(data) }, peers[dest], self.tag, context, SendMode::Standard)?);
                    }
                }
                let mut truncated = false;
                for request in receives.iter_mut().filter_map(Option::take) {
                    truncated |= engine.wait(request)?.truncated;
                }
                for request in sends.iter_mut().filter_map(Option::take) {
                    engine.wait(request)?;
                }
                Ok(truncated)
            };
            Ok(exchange().map_err(channel_failure).and_then(|truncated| if truncated { Err(MPI_ERR_TRUNCATE) } else { Ok(()) }))
        })
        .map_err(|e| e.class)?
    }

    fn tuning(&self) -> CollTuning {
        self.tuning
    }
}

/// Most ranks [`CommChannel::exchange_all`] posts every receive for at once.
const EXCHANGE_ALL_MAX: usize = 16;

fn check_truncation(status: braid_engine::Status) -> Result<(), i32> {
    if status.truncated {
        Err(MPI_ERR_TRUNCATE)
    } else {
        Ok(())
    }
}
