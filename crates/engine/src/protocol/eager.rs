//! The eager protocol: the message travels with its header (EAGER: context and tag; EAGER_SYNC
//! for MPI_Ssend, naming the sender's request, answered by ACK once matched). A standard send is
//! complete once its frame has left. On arrival the message is matched against the posted
//! receives and copied straight from the transport into the receive buffer, or kept on the
//! unexpected queue.

use braid_lane::PeerId;
use braid_transport::{Payload, SendOutcome};

use crate::endpoint::{ControlLane, Lane};
use crate::frame::Frame;
use crate::matching::{Body, Unexpected};
use crate::requests::Operation;
use crate::{gather, protocol_error, transport_error, Core, Engine, EngineError, RequestId, SendMode, Status};

impl Engine {
    /// A standard-mode send that finishes at once, with no request: the message is small enough
    /// to go eagerly, nothing is queued to `dest`, and its transport takes the frame now.
    /// `Ok(false)`: nothing was sent; the caller uses [`Engine::isend`]. Always inlined: it is
    /// most of the small-message send path, and a call would cost that path a tenth more.
    #[inline(always)]
    pub fn try_send_now(&mut self, data: &[u8], dest: u32, tag: i32, context: u32) -> Result<bool, EngineError> {
        // One load tells whether the peer is reached directly with nothing queued, and how
        // large an eager message to it may be.
        let Some(endpoint) = self.core.endpoints.get(dest as usize) else { return Ok(false) };
        let Lane { control: ControlLane::Direct(route), eager_limit, queued: false } = endpoint.lane else { return Ok(false) };
        if data.len() > eager_limit {
            return Ok(false);
        }
        let header = Frame::eager_bytes(context, tag);
        let transport = &mut self.transports[route];
        match transport.try_send(dest, &header, &gather(data)) {
            Ok(SendOutcome::Sent) => {
                self.core.counters.eager_sent_now(dest, data.len());
                Ok(true)
            }
            Ok(SendOutcome::WouldBlock) => Ok(false),
            Err(error) => Err(transport_error(transport.as_ref(), dest, error)),
        }
    }

    /// A standard-mode send: finished at once where [`Engine::try_send_now`] can (`None`), else
    /// started (its request, which the caller waits for or reaps). Always inlined, as
    /// `try_send_now` is: small collectives' exchanges go through it.
    #[inline(always)]
    pub fn send_or_start(&mut self, data: &'static [u8], dest: u32, tag: i32, context: u32) -> Result<Option<RequestId>, EngineError> {
        if self.try_send_now(data, dest, tag, context)? {
            return Ok(None);
        }
        self.isend(data, dest, tag, context, SendMode::Standard).map(Some)
    }
}

impl Core {
    #[inline(always)]
    pub(crate) fn arrive_eager(&mut self, peer: PeerId, context: u32, tag: i32, payload: Payload<'_>, ack_to: Option<u32>) -> Result<(), EngineError> {
        match self.matching.take_posted(context, peer, tag) {
            Some(request) => {
                self.deliver(request, peer, tag, payload)?;
                if let Some(sender) = ack_to {
                    self.queue_frame(peer, Frame::Ack { sender }, &[], 0);
                }
            }
            None => self.store_unexpected(peer, context, tag, payload, ack_to),
        }
        Ok(())
    }

    #[cold]
    pub(crate) fn store_unexpected(&mut self, peer: PeerId, context: u32, tag: i32, payload: Payload<'_>, ack_to: Option<u32>) {
        self.unexpected_stored();
        let mut copy = self.spare_payloads.pop().unwrap_or_default();
        copy.clear();
        payload.append_to(&mut copy);
        self.matching.add_unexpected(context, Unexpected { source: peer, tag, body: Body::Eager { payload: copy, ack_to } });
    }

    /// Copies a whole message into receive `request` and completes it.
    #[inline(always)]
    pub(crate) fn deliver(&mut self, request: u32, peer: PeerId, tag: i32, payload: Payload<'_>) -> Result<(), EngineError> {
        let Some(Operation::Recv { buffer, .. }) = self.requests.get_mut(request).map(|slot| &mut slot.operation) else {
            return Err(protocol_error(peer, "matched a receive that does not exist"));
        };
        let count = payload.len().min(buffer.len());
        payload.copy_front_to(&mut buffer[..count]);
        let truncated = payload.len() > count;
        self.requests.complete(request, Status { source: peer, tag, count, cancelled: false, truncated });
        Ok(())
    }
}
