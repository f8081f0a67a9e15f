//! The rendezvous protocol, above the eager limit: the sender announces the message (RTS, with a
//! description of its buffer). The receive, once matched, moves the bytes by its endpoint's bulk
//! path: it reads them itself (`single_copy.rs`), or asks with CTS for a pipeline of DATA frames
//! (`pipeline.rs`) or a split over the rails (`rails/transfer.rs`). DATA, whichever lane brings
//! it, arrives through one entry; FIN completes the send.

use braid_lane::PeerId;
use braid_transport::{Payload, RemoteRegion};

use super::{Read, Stream};
use crate::endpoint::{BulkPath, ControlLane};
use crate::frame::{Frame, DATA_HEADER};
use crate::requests::Operation;
use crate::{protocol_error, Core, Engine, EngineError, Status};

use super::single_copy::Share;

impl Engine {
    /// What the RTS of a rendezvous send on `control` says of its buffer: what the direct
    /// transport exposes to remote access; the rails read nothing remotely, so only the length.
    pub(crate) fn expose(&self, control: ControlLane, data: &'static [u8]) -> RemoteRegion {
        match control {
            ControlLane::Direct(transport) => self.transports[transport].expose(data),
            ControlLane::Rails => RemoteRegion { pid: 0, address: 0, len: data.len() as u64 },
        }
    }
}

impl Core {
    /// Receive `request` has matched an RTS: the bytes move by the endpoint's bulk path.
    pub(crate) fn start_rendezvous_receive(&mut self, request: u32, peer: PeerId, tag: i32, sender: u32, region: RemoteRegion) -> Result<(), EngineError> {
        let path = self.endpoints[peer as usize].bulk_path(&self.policy, &self.caps, usize::try_from(region.len).unwrap_or(usize::MAX));
        let Some(slot) = self.requests.get_mut(request) else {
            return Err(protocol_error(peer, "matched a receive that does not exist"));
        };
        let Operation::Recv { buffer, expected, received, fin_to, .. } = &mut slot.operation else {
            return Err(protocol_error(peer, "matched a send request"));
        };
        let message_len = usize::try_from(region.len).unwrap_or(usize::MAX);
        let wanted = message_len.min(buffer.len());
        *expected = wanted;
        *received = 0;
        if path == BulkPath::Split {
            // The chunks come over several rails, in any order: the sender learns from FIN that
            // all of them are in.
            *fin_to = Some(sender);
        }
        slot.status = Status { source: peer, tag, count: wanted, cancelled: false, truncated: message_len > wanted };
        if wanted == 0 {
            self.requests.finish(request);
            self.queue_frame(peer, Frame::Fin { sender }, &[], 0);
            return Ok(());
        }
        if self.debug {
            debug_line!(self.rank, "{wanted}-byte rendezvous from rank {peer}: {path:?}");
        }
        match path {
            BulkPath::SingleCopy { transport, chunk } => {
                // A rank reading its own send has no second core to share the copy with.
                let confirmed = peer != self.rank && self.endpoints[peer as usize].remote_read_confirmed;
                let read = Read { request, peer, transport, sender, region, offset: 0, end: wanted, chunk, share: None };
                match self.policy.shared_copy_split(wanted, confirmed) {
                    Some(split) => self.reads.push(Read { end: split, share: Some(Share { wanted, token: None }), ..read }),
                    None => self.reads.push(read),
                }
            }
            BulkPath::Pipeline => self.queue_frame(peer, Frame::Cts { sender, receiver: request, len: wanted as u64 }, &[], 0),
            BulkPath::Split => {
                // The CTS's sequence number on the control channel names the transfer.
                let transfer = self.net.queue_control(peer, Frame::Cts { sender, receiver: request, len: wanted as u64 }, &[], None);
                self.net.expect(peer, request, transfer, wanted);
            }
        }
        Ok(())
    }

    /// The receiver asked with CTS for `len` bytes of send `request`: they go by the endpoint's
    /// bulk path, a pipeline on a direct lane or a split over the rails. `transfer`: the CTS's
    /// sequence number on the rails (0 on a direct lane), which names the transfer there.
    pub(crate) fn start_bulk_send(&mut self, peer: PeerId, request: u32, receiver: u32, len: u64, transfer: u64) -> Result<(), EngineError> {
        let data = self.send_data(peer, request)?;
        let wanted = usize::try_from(len).unwrap_or(usize::MAX).min(data.len());
        if wanted == 0 {
            return self.complete_send(peer, request);
        }
        match self.endpoints[peer as usize].lane.control {
            ControlLane::Direct(transport) => {
                let chunk = self.policy.pipeline_chunk(&self.caps[transport], DATA_HEADER);
                self.streams.push(Stream { request, peer, transport, receiver, data: &data[..wanted], offset: 0, chunk, completes: true });
            }
            ControlLane::Rails => self.net.start_transfer(peer, request, receiver, transfer, &data[..wanted]),
        }
        Ok(())
    }

    /// FIN: the receiver has every byte of send `request`, which is complete.
    pub(crate) fn finish_send(&mut self, peer: PeerId, request: u32) -> Result<(), EngineError> {
        let endpoint = &mut self.endpoints[peer as usize];
        if endpoint.lane.control == ControlLane::Rails {
            // Its chunks need no re-sending any more.
            self.net.finish_transfer(peer, request);
            if self.debug {
                debug_line!(self.rank, "FIN from rank {peer}");
            }
        }
        endpoint.rendezvous_ended();
        self.complete_send(peer, request)
    }

    /// DATA: `payload` is `[offset, offset + len)` of receive `receiver`. The bulk path checks
    /// the chunk (the rails drop one of an earlier transfer, and count only bytes no other rail
    /// brought already); the bytes new to the receive count toward its completion.
    pub(crate) fn arrive_data(&mut self, peer: PeerId, receiver: u32, offset: u64, transfer: u64, payload: Payload<'_>) -> Result<(), EngineError> {
        let offset = usize::try_from(offset).map_err(|_| protocol_error(peer, "DATA offset out of range"))?;
        let fresh = match self.endpoints[peer as usize].lane.control {
            ControlLane::Direct(_) => payload.len(),
            ControlLane::Rails => match self.net.place_data(peer, receiver, offset, transfer, payload.len())? {
                Some(fresh) => fresh,
                None => return Ok(()),
            },
        };
        payload.copy_front_to(self.data_place(peer, receiver, offset, payload.len())?);
        self.add_received(peer, receiver, fresh)
    }

    /// A rails chunk (NET_DATA) whose `len` bytes the transport received straight into their
    /// place ([`Core::place_rail_data`]): only its range is recorded, like any chunk's.
    pub(crate) fn arrive_placed_data(&mut self, peer: PeerId, receiver: u32, offset: u64, transfer: u64, len: usize) -> Result<(), EngineError> {
        let offset = usize::try_from(offset).map_err(|_| protocol_error(peer, "DATA offset out of range"))?;
        match self.net.place_data(peer, receiver, offset, transfer, len)? {
            Some(fresh) => self.add_received(peer, receiver, fresh),
            None => Ok(()),
        }
    }

    /// Where the `len` bytes of a DATA chunk at `offset` of receive `receiver` go.
    pub(crate) fn data_place(&mut self, peer: PeerId, receiver: u32, offset: usize, len: usize) -> Result<&mut [u8], EngineError> {
        let Some(slot) = self.requests.get_mut(receiver) else {
            return Err(protocol_error(peer, "DATA for an unknown receive"));
        };
        let Operation::Recv { buffer, expected, .. } = &mut slot.operation else {
            return Err(protocol_error(peer, "DATA for a send request"));
        };
        match offset.checked_add(len).filter(|&end| end <= *expected) {
            Some(end) => Ok(&mut buffer[offset..end]),
            None => Err(protocol_error(peer, "DATA beyond the expected length")),
        }
    }

    /// `bytes` more of receive `request` are in place; completes it when all are, and answers
    /// FIN where the sender waits for it (a shared copy, a split over the rails).
    pub(crate) fn add_received(&mut self, peer: PeerId, request: u32, bytes: usize) -> Result<(), EngineError> {
        let Some(Operation::Recv { expected, received, fin_to, .. }) = self.requests.get_mut(request).map(|slot| &mut slot.operation) else {
            return Err(protocol_error(peer, "data for an unknown receive"));
        };
        *received += bytes;
        if *received > *expected {
            return Err(protocol_error(peer, "more data than the receive expects"));
        }
        if *received == *expected {
            let (fin_to, expected) = (*fin_to, *expected);
            self.requests.finish(request);
            if self.debug && self.endpoints[peer as usize].lane.control == ControlLane::Rails {
                debug_line!(self.rank, "{expected}-byte receive from rank {peer} complete: {}", self.rail_arrivals.take_summary());
            }
            if let Some(sender) = fin_to {
                // A shared copy is settled: the next one with this peer may be offered.
                self.endpoints[peer as usize].share_open = false;
                self.queue_frame(peer, Frame::Fin { sender }, &[], 0);
            }
        }
        Ok(())
    }
}
