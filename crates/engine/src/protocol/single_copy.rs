//! Single copy on a direct transport that can reach the peer's memory (CMA for shared memory):
//! the receiver reads the sender's buffer itself, a chunk per progress step, then sends FIN.
//! From the second large message from a peer on, the receiver may offer the sender the second
//! half (PUT): a sender waiting in MPI claims the offer and writes its half into the receive
//! buffer (PUT_DONE); an offer still unclaimed when the receiver's half is read is revoked, and
//! the receiver reads it all. A refused read falls back to the pipeline (CTS), a refused write
//! streams the rest of its half.

use braid_lane::PeerId;
use braid_transport::{RemoteRegion, TransportError};

use super::Stream;
use crate::endpoint::ControlLane;
use crate::frame::{Frame, DATA_HEADER};
use crate::requests::Operation;
use crate::{protocol_error, transport_error, Core, Engine, EngineError};

/// The sender's share of a shared single copy, written into the receiver's buffer once the
/// sender has claimed the receiver's offer.
#[derive(Clone, Copy)]
pub(crate) struct Write {
    pub(crate) request: u32,
    pub(crate) peer: PeerId,
    pub(crate) transport: usize,
    pub(crate) receiver: u32,
    pub(crate) token: u64,
    /// The send data up to the end of this share.
    pub(crate) data: &'static [u8],
    /// The receive buffer (its first `data.len()` bytes).
    pub(crate) region: RemoteRegion,
    pub(crate) start: usize,
    pub(crate) offset: usize,
    pub(crate) chunk: usize,
}

/// The receiver's side of a shared copy.
#[derive(Clone, Copy)]
pub(crate) struct Share {
    /// Bytes of the whole receive (the read covers `[0, end)` of them).
    pub(crate) wanted: usize,
    /// The transport's offer token, once offered.
    pub(crate) token: Option<u64>,
}

/// A single-copy rendezvous being read by the receiver.
#[derive(Clone, Copy)]
pub(crate) struct Read {
    pub(crate) request: u32,
    pub(crate) peer: PeerId,
    pub(crate) transport: usize,
    pub(crate) sender: u32,
    pub(crate) region: RemoteRegion,
    pub(crate) offset: usize,
    pub(crate) end: usize,
    pub(crate) chunk: usize,
    /// A copy offered to be shared: the sender may write the bytes past `end`.
    pub(crate) share: Option<Share>,
}

impl Core {
    /// The receiver shares the copy of send `request`: write `[offset, end)` into its buffer.
    pub(crate) fn start_put(&mut self, peer: PeerId, request: u32, receiver: u32, range: (u64, u64), target: (i32, u64), token: u64) -> Result<(), EngineError> {
        let data = self.send_data(peer, request)?;
        let (Ok(start), Ok(end)) = (usize::try_from(range.0), usize::try_from(range.1)) else {
            return Err(protocol_error(peer, "PUT range out of bounds"));
        };
        if start >= end || end > data.len() {
            return Err(protocol_error(peer, "PUT range out of bounds"));
        }
        let ControlLane::Direct(transport) = self.endpoints[peer as usize].lane.control else {
            return Err(protocol_error(peer, "PUT from a network peer"));
        };
        let region = RemoteRegion { pid: target.0, address: target.1, len: end as u64 };
        let chunk = self.policy.remote_write_chunk();
        self.writes.push(Write { request, peer, transport, receiver, token, data: &data[..end], region, start, offset: start, chunk });
        Ok(())
    }
}

impl Engine {
    /// Reads one chunk of every single-copy rendezvous in progress.
    pub(crate) fn advance_reads(&mut self) -> Result<bool, EngineError> {
        let mut moved = false;
        let mut index = 0;
        while index < self.core.reads.len() {
            let mut read = self.core.reads[index];
            if matches!(read.share, Some(Share { token: None, .. })) {
                index += 1;
                continue;
            }
            let transport = &mut self.transports[read.transport];
            let Some(Operation::Recv { buffer, .. }) = self.core.requests.get_mut(read.request).map(|slot| &mut slot.operation) else {
                return Err(protocol_error(read.peer, "single-copy read into a vanished receive"));
            };
            let end = read.offset + read.chunk.min(read.end - read.offset);
            match transport.remote_read(read.peer, read.region, read.offset as u64, &mut buffer[read.offset..end]) {
                Ok(()) => {
                    self.core.counters.copied_in(read.peer, end - read.offset);
                    read.offset = end;
                    moved = true;
                    self.core.endpoints[read.peer as usize].remote_read_confirmed = true;
                    let unclaimed = match read.share {
                        Some(Share { wanted, token: Some(token) }) if read.offset == read.end => transport.revoke_share(read.peer, token).then_some(wanted),
                        _ => None,
                    };
                    if let Some(wanted) = unclaimed {
                        if self.core.debug {
                            debug_line!(self.core.rank, "rank {} did not claim its part of a shared copy; reading it all", read.peer);
                        }
                        self.core.endpoints[read.peer as usize].share_open = false;
                        // The sender has not taken its part (it is busy outside MPI): read it too.
                        read.end = wanted;
                        read.share = None;
                        self.core.reads[index] = read;
                        index += 1;
                    } else if read.offset == read.end {
                        self.core.reads.swap_remove(index);
                        if read.share.is_some() {
                            self.core.add_received(read.peer, read.request, read.end)?;
                        } else {
                            self.core.requests.finish(read.request);
                            self.core.queue_frame(read.peer, Frame::Fin { sender: read.sender }, &[], 0);
                        }
                    } else {
                        self.core.reads[index] = read;
                        index += 1;
                    }
                }
                Err(TransportError::RemoteAccessRefused | TransportError::Unsupported(_)) if read.share.is_none() => {
                    self.fall_back_to_pipeline(index);
                    moved = true;
                }
                Err(error) => return Err(transport_error(transport.as_ref(), read.peer, error)),
            }
        }
        Ok(moved)
    }

    /// Offers the sender its part of the next shared copy with each peer that has none open
    /// (PUT); true if any was offered. Shared copies with one peer thus run one after another,
    /// each on both cores, and a read waiting for its offer is not started alone.
    pub(crate) fn offer_shares(&mut self) -> bool {
        let mut offered = false;
        for index in 0..self.core.reads.len() {
            let mut read = self.core.reads[index];
            let Some(Share { wanted, token: None }) = read.share else { continue };
            if self.core.endpoints[read.peer as usize].rendezvous_out > 0 {
                // Traffic both ways: the peer's core is busy reading ours.
                read.end = wanted;
                read.share = None;
                self.core.reads[index] = read;
                continue;
            }
            if self.core.endpoints[read.peer as usize].share_open {
                continue;
            }
            let Some(Operation::Recv { buffer, fin_to, .. }) = self.core.requests.get_mut(read.request).map(|slot| &mut slot.operation) else { continue };
            let own = RemoteRegion::of_own(&buffer[..wanted]);
            match self.transports[read.transport].offer_share(read.peer) {
                Some(token) => {
                    // Only an offered copy completes through `add_received`, which then tells the
                    // sender and settles the pair's offer.
                    *fin_to = Some(read.sender);
                    self.core.endpoints[read.peer as usize].share_open = true;
                    read.share = Some(Share { wanted, token: Some(token) });
                    let put = Frame::Put { sender: read.sender, receiver: read.request, offset: read.end as u64, end: wanted as u64, pid: own.pid, address: own.address, token };
                    self.core.queue_frame(read.peer, put, &[], 0);
                    offered = true;
                }
                None => {
                    read.end = wanted;
                    read.share = None;
                }
            }
            self.core.reads[index] = read;
        }
        offered
    }

    /// Writes the sender's part of every shared copy whose offer it can claim.
    pub(crate) fn advance_writes(&mut self) -> Result<bool, EngineError> {
        let moved = !self.core.writes.is_empty();
        while let Some(mut write) = self.core.writes.pop() {
            let transport = &mut self.transports[write.transport];
            if self.core.endpoints[write.peer as usize].remote_write_refused || !transport.claim_share(write.peer, write.token) {
                // Unclaimed (or revoked): the receiver copies it all.
                continue;
            }
            // Claimed: the whole part is written now, so the receiver never waits for this rank
            // to come back into MPI.
            while write.offset < write.data.len() {
                let end = write.offset + write.chunk.min(write.data.len() - write.offset);
                match transport.remote_write(write.peer, write.region, write.offset as u64, &write.data[write.offset..end]) {
                    Ok(()) => write.offset = end,
                    Err(TransportError::RemoteAccessRefused | TransportError::Unsupported(_)) => break,
                    Err(error) => return Err(transport_error(transport.as_ref(), write.peer, error)),
                }
            }
            self.core.counters.copied_out(write.peer, write.offset - write.start);
            if write.offset < write.data.len() {
                self.stream_instead_of_writing(write);
                continue;
            }
            let done = Frame::PutDone { sender: write.request, receiver: write.receiver, len: (write.offset - write.start) as u64 };
            self.core.queue_frame(write.peer, done, &[], 0);
        }
        Ok(moved)
    }

    /// The kernel refused to let us write into that peer: what is written is reported, the rest
    /// of the share goes through the pipeline (the send still completes on the receiver's FIN),
    /// and later offers from that peer are left to the receiver.
    #[cold]
    pub(crate) fn stream_instead_of_writing(&mut self, write: Write) {
        self.core.endpoints[write.peer as usize].remote_write_refused = true;
        if self.core.debug {
            debug_line!(self.core.rank, "remote write into rank {} refused; streaming the rest of the share", write.peer);
        }
        if write.offset > write.start {
            let done = Frame::PutDone { sender: write.request, receiver: write.receiver, len: (write.offset - write.start) as u64 };
            self.core.queue_frame(write.peer, done, &[], 0);
        }
        let chunk = self.core.policy.pipeline_chunk(&self.core.caps[write.transport], DATA_HEADER);
        let stream = Stream { request: write.request, peer: write.peer, transport: write.transport, receiver: write.receiver, data: write.data, offset: write.offset, chunk, completes: false };
        self.core.streams.push(stream);
    }

    /// The kernel refused to let us read that peer: ask it to stream instead, now and from now on.
    #[cold]
    pub(crate) fn fall_back_to_pipeline(&mut self, index: usize) {
        let read = self.core.reads.swap_remove(index);
        self.core.endpoints[read.peer as usize].remote_read_refused = true;
        if self.core.debug {
            debug_line!(self.core.rank, "remote read from rank {} refused; using the two-copy pipeline", read.peer);
        }
        if let Some(Operation::Recv { received, .. }) = self.core.requests.get_mut(read.request).map(|slot| &mut slot.operation) {
            *received = 0;
        }
        self.core.queue_frame(read.peer, Frame::Cts { sender: read.sender, receiver: read.request, len: read.end as u64 }, &[], 0);
    }
}
