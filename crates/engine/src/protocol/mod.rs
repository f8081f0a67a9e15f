//! The point-to-point protocols, written once against the endpoints (`endpoint.rs`), whatever
//! lane reaches the peer:
//! * `eager.rs`: the message travels with its header (EAGER, or EAGER_SYNC answered by ACK);
//! * `rendezvous.rs`: RTS, then the endpoint's bulk path (a single-copy read, or CTS for a
//!   pipeline or a split over the rails); DATA arrival; FIN;
//! * `single_copy.rs`: remote reads and the shared copies written by the sender;
//! * `pipeline.rs`: DATA streams on a direct transport;
//! * `cancel.rs`: CANCEL and its answer;
//! * `dispatch.rs`: the one entry of every arriving frame.

mod cancel;
mod dispatch;
mod eager;
#[cfg(test)]
mod hostile_peer;
mod pipeline;
mod rendezvous;
mod single_copy;

pub(crate) use pipeline::Stream;
pub(crate) use single_copy::{Read, Write};

use braid_lane::PeerId;
use braid_transport::Payload;

use crate::frame::Frame;
use crate::matching::{Body, Unexpected};
use crate::requests::Operation;
use crate::{protocol_error, Core, Engine, EngineError, SPARE_PAYLOADS};

impl Core {
    pub(crate) fn complete_send(&mut self, peer: PeerId, request: u32) -> Result<(), EngineError> {
        match self.requests.get(request) {
            Some(slot) if matches!(slot.operation, Operation::Send { .. }) && !slot.done => {
                self.requests.finish(request);
                Ok(())
            }
            _ => Err(protocol_error(peer, "completion for an unknown send")),
        }
    }

    /// The sending side of a send request, for a CTS.
    pub(crate) fn send_data(&self, peer: PeerId, request: u32) -> Result<&'static [u8], EngineError> {
        match self.requests.get(request) {
            Some(slot) if !slot.done => match slot.operation {
                Operation::Send { data, .. } => Ok(data),
                _ => Err(protocol_error(peer, "CTS for a receive request")),
            },
            _ => Err(protocol_error(peer, "CTS for an unknown send")),
        }
    }
}

impl Engine {
    /// Receive `request` has taken an unexpected `message` (irecv, imrecv): an eager payload is
    /// copied at once, an RTS starts the rendezvous.
    #[cold]
    pub(crate) fn receive_unexpected(&mut self, request: u32, message: Unexpected) -> Result<(), EngineError> {
        self.core.counters.unexpected_taken();
        let Unexpected { source, tag, body } = message;
        match body {
            Body::Eager { payload, ack_to } => {
                self.core.deliver(request, source, tag, Payload::Complete(&payload))?;
                if self.core.spare_payloads.len() < SPARE_PAYLOADS {
                    self.core.spare_payloads.push(payload);
                }
                if let Some(sender) = ack_to {
                    self.core.queue_frame(source, Frame::Ack { sender }, &[], 0);
                }
            }
            Body::Rendezvous { sender, region } => self.core.start_rendezvous_receive(request, source, tag, sender, region)?,
        }
        self.flush_endpoint(source).map(|_| ())
    }
}
