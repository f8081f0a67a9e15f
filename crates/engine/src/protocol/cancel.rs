//! Cancelling a send whose message has left: CANCEL names the sender's request; the receiver
//! withdraws the message if nothing has matched it yet and answers CANCELLED either way, in
//! order behind any ACK, CTS or FIN of that message.

use braid_lane::PeerId;

use crate::frame::{CancelOutcome, Frame};
use crate::matching::{Body, Unexpected};
use crate::requests::Operation;
use crate::{protocol_error, Core, Engine, EngineError, RequestId, Status, SELF_TRANSPORT, SPARE_PAYLOADS};

impl Core {
    /// A CANCEL from `peer`: withdraws its message if no receive or probe has matched it yet,
    /// and answers either way (in order behind any ACK, CTS or FIN of that message).
    #[cold]
    pub(crate) fn answer_cancel(&mut self, peer: PeerId, context: u32, sender: u32) {
        let outcome = self.withdraw_cancelled(peer, context, sender);
        self.queue_frame(peer, Frame::Cancelled { sender, outcome }, &[], 0);
    }

    /// Takes `peer`'s message (its send `sender`) out of matching if nothing has matched it yet.
    fn withdraw_cancelled(&mut self, peer: PeerId, context: u32, sender: u32) -> CancelOutcome {
        match self.matching.withdraw(context, peer, sender) {
            None => CancelOutcome::Matched,
            Some(Unexpected { body: Body::Eager { payload, .. }, .. }) => {
                if self.spare_payloads.len() < SPARE_PAYLOADS {
                    self.spare_payloads.push(payload);
                }
                CancelOutcome::WithdrawnEager
            }
            Some(Unexpected { body: Body::Rendezvous { .. }, .. }) => CancelOutcome::WithdrawnRendezvous,
        }
    }

    /// The receiver's answer to our CANCEL of send `request`. A withdrawn message completes the
    /// send as cancelled (nothing else will ever refer to it); otherwise it completes as usual.
    #[cold]
    pub(crate) fn settle_cancel(&mut self, peer: PeerId, request: u32, outcome: CancelOutcome) -> Result<(), EngineError> {
        if outcome == CancelOutcome::Matched {
            // The send may have completed and its number been reused since: nothing to do.
            return Ok(());
        }
        let status = match self.requests.get(request) {
            Some(slot) if matches!(slot.operation, Operation::Send { dest, .. } if dest == peer) && !slot.done => slot.status,
            _ => return Err(protocol_error(peer, "cancellation of an unknown send")),
        };
        if outcome == CancelOutcome::WithdrawnRendezvous {
            self.endpoints[peer as usize].rendezvous_ended();
        }
        self.requests.complete(request, Status { count: 0, cancelled: true, ..status });
        Ok(())
    }
}

impl Engine {
    /// MPI_Cancel. A receive that has not matched is cancelled at once (true). A send whose
    /// message has not left this rank is taken back at once (true). For a synchronous or
    /// rendezvous send the receiver is asked (CANCEL) to withdraw the message if nothing has
    /// matched it; its answer arrives in a later progress step and the send then completes,
    /// cancelled or not. A standard eager send that has left is complete and stays so, as are
    /// requests that are complete already (false).
    pub fn cancel(&mut self, request: RequestId) -> bool {
        let (context, dest) = match self.core.requests.get(request.0) {
            Some(slot) if !slot.done => match slot.operation {
                Operation::Recv { context, .. } => (context, None),
                Operation::Send { dest, context, .. } => (context, Some(dest)),
                Operation::Free => return false,
            },
            _ => return false,
        };
        if let Some(dest) = dest {
            return self.cancel_send(request.0, dest, context);
        }
        if !self.core.matching.remove_posted(context, request.0) {
            return false;
        }
        self.core.requests.complete(request.0, Status { source: 0, tag: 0, count: 0, cancelled: true, truncated: false });
        true
    }

    #[cold]
    fn cancel_send(&mut self, request: u32, dest: u32, context: u32) -> bool {
        // A frame still in a direct lane's backlog has not left this rank and is taken back; the
        // rails number a frame when it is queued, so theirs stay.
        if dest == self.core.rank {
            return self.cancel_self_send(request, context);
        }
        if self.core.unqueue_send(dest, request) {
            let status = self.core.requests.get(request).map(|slot| slot.status);
            if let Some(status) = status {
                self.core.requests.complete(request, Status { count: 0, cancelled: true, ..status });
            }
            return true;
        }
        self.core.queue_frame(dest, Frame::Cancel { context, sender: request }, &[], 0);
        false
    }

    /// A send to this rank itself is settled at once, as the receiver would settle it: what the
    /// self lane still holds is delivered to matching first, then the message is withdrawn unless
    /// a receive has matched it. A program that cancels and then asks once whether the send was
    /// cancelled (and receives the message if not) gets a definite answer.
    #[cold]
    fn cancel_self_send(&mut self, request: u32, context: u32) -> bool {
        let core = &mut self.core;
        self.transports[SELF_TRANSPORT].poll(&mut |incoming| core.on_frame(incoming));
        let outcome = core.withdraw_cancelled(core.rank, context, request);
        // An error here (a request that is not this send) surfaces as the engine's failure at
        // the next progress step.
        if let Err(e) = core.settle_cancel(core.rank, request, outcome) {
            core.failure.get_or_insert(e);
        }
        outcome != CancelOutcome::Matched
    }
}
