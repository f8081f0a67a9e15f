//! The one entry of every arriving frame. A plain eager message from a direct lane, the
//! commonest frame, is matched in the poll callback itself; any other frame is decoded (a rail
//! frame first leaves its control envelope, its sequence number checked) and goes to the one
//! [`Core::dispatch`], whichever lane brought it.

use braid_lane::PeerId;
use braid_transport::{Incoming, Payload, RemoteRegion};

use crate::endpoint::ControlLane;
use crate::frame::{batch_entries, Frame, NetFrame};
use crate::matching::{Body, Unexpected};
use crate::{protocol_error, Core, EngineError};

impl Core {
    /// Inlined into the poll callback: a plain eager message from a peer reached directly, the
    /// commonest frame, is matched and delivered without the general decoder and dispatch.
    #[inline(always)]
    pub(crate) fn on_frame(&mut self, incoming: Incoming<'_>) {
        if let Some((context, tag)) = Frame::eager_fields(incoming.header) {
            if self.endpoints[incoming.peer as usize].lane.control != ControlLane::Rails {
                self.counters.eager_received(incoming.peer, incoming.payload.len());
                if let Err(error) = self.arrive_eager(incoming.peer, context, tag, incoming.payload, None) {
                    self.failure.get_or_insert(error);
                }
                return;
            }
        }
        self.on_any_frame(incoming);
    }

    #[inline(never)]
    fn on_any_frame(&mut self, incoming: Incoming<'_>) {
        self.counters.frame_received(incoming.peer, incoming.payload.len());
        let result = if NetFrame::is_network(incoming.header) {
            self.accept_from_rails(incoming.peer, incoming.header, incoming.payload.whole())
        } else {
            self.accept_direct(incoming.peer, incoming.header, incoming.payload)
        };
        if let Err(error) = result {
            self.failure.get_or_insert(error);
        }
    }

    /// Where the payload of a frame from `peer` whose header is in goes, if it can be received
    /// there directly: a rails chunk (NET_DATA) that a receive still waits for, its place in that
    /// receive's buffer. Anything else (`None`) is delivered whole, through [`Core::on_frame`].
    pub(crate) fn place_rail_data(&mut self, peer: PeerId, header: &[u8], len: usize) -> Option<&mut [u8]> {
        let Some(NetFrame::Data { receiver, offset, transfer }) = NetFrame::decode(header) else { return None };
        if self.endpoints.get(peer as usize)?.lane.control != ControlLane::Rails || !self.net.expects(peer, receiver, transfer) {
            return None;
        }
        self.data_place(peer, receiver, usize::try_from(offset).ok()?, len).ok()
    }

    /// The payload of the frame with `header` from `peer` was received where
    /// [`Core::place_rail_data`] said.
    #[inline(never)]
    pub(crate) fn on_placed(&mut self, peer: PeerId, header: &[u8], len: usize) {
        self.counters.frame_received(peer, len);
        let result = match NetFrame::decode(header) {
            Some(NetFrame::Data { receiver, offset, transfer }) => self.arrive_placed_data(peer, receiver, offset, transfer, len),
            _ => Err(protocol_error(peer, "a placed payload that is no rails chunk")),
        };
        if let Err(error) = result {
            self.failure.get_or_insert(error);
        }
    }

    /// A frame from a direct lane.
    #[inline]
    fn accept_direct(&mut self, peer: PeerId, header: &[u8], payload: Payload<'_>) -> Result<(), EngineError> {
        let frame = Frame::decode(header).ok_or_else(|| protocol_error(peer, "malformed header"))?;
        if self.endpoints[peer as usize].lane.control == ControlLane::Rails {
            return Err(protocol_error(peer, "a frame without sequence number from a network peer"));
        }
        self.dispatch(peer, frame, payload, 0)
    }

    /// A frame from the rails: a control frame leaves its envelope once its sequence number says
    /// it is new; acknowledgements and batches belong to the control channel; chunks go to the
    /// one DATA entry.
    fn accept_from_rails(&mut self, peer: PeerId, header: &[u8], payload: &[u8]) -> Result<(), EngineError> {
        if self.endpoints[peer as usize].lane.control != ControlLane::Rails {
            return Err(protocol_error(peer, "a network frame from a peer not routed over the rails"));
        }
        match NetFrame::decode(header).ok_or_else(|| protocol_error(peer, "malformed network header"))? {
            NetFrame::Control { seq, ack, inner } => {
                let frame = Frame::decode(inner).ok_or_else(|| protocol_error(peer, "malformed header"))?;
                if !self.net.accept_control(peer, seq, ack)? {
                    return Ok(());
                }
                self.dispatch(peer, frame, Payload::Complete(payload), seq)
            }
            NetFrame::Ack { ack } => self.net.acknowledged(peer, ack),
            NetFrame::Data { receiver, offset, transfer } => self.arrive_data(peer, receiver, offset, transfer, Payload::Complete(payload)),
            NetFrame::Batch => {
                for entry in batch_entries(payload) {
                    let (header, payload) = entry.map_err(|()| protocol_error(peer, "malformed batch"))?;
                    if !matches!(NetFrame::decode(header), Some(NetFrame::Control { .. })) {
                        return Err(protocol_error(peer, "a batch may carry only control frames"));
                    }
                    self.accept_from_rails(peer, header, payload)?;
                }
                Ok(())
            }
        }
    }

    /// Every protocol frame, whichever lane brought it. `seq`: its sequence number on the rails'
    /// control channel (0 on a direct lane), which names the transfer a CTS asks for.
    #[inline]
    fn dispatch(&mut self, peer: PeerId, frame: Frame, payload: Payload<'_>, seq: u64) -> Result<(), EngineError> {
        match frame {
            Frame::Eager { context, tag } => {
                self.counters.message_received(peer, payload.len());
                self.arrive_eager(peer, context, tag, payload, None)
            }
            Frame::EagerSync { context, tag, sender } => {
                self.counters.message_received(peer, payload.len());
                self.arrive_eager(peer, context, tag, payload, Some(sender))
            }
            Frame::Rts { context, tag, len, sender, pid, address } => {
                let region = RemoteRegion { pid, address, len };
                self.counters.message_received(peer, usize::try_from(len).unwrap_or(usize::MAX));
                match self.matching.take_posted(context, peer, tag) {
                    Some(request) => self.start_rendezvous_receive(request, peer, tag, sender, region),
                    None => {
                        self.unexpected_stored();
                        self.matching.add_unexpected(context, Unexpected { source: peer, tag, body: Body::Rendezvous { sender, region } });
                        Ok(())
                    }
                }
            }
            Frame::Cts { sender, receiver, len } => self.start_bulk_send(peer, sender, receiver, len, seq),
            Frame::Data { receiver, offset } => self.arrive_data(peer, receiver, offset, 0, payload),
            Frame::Fin { sender } => self.finish_send(peer, sender),
            Frame::Ack { sender } => self.complete_send(peer, sender),
            Frame::Put { sender, receiver, offset, end, pid, address, token } => self.start_put(peer, sender, receiver, (offset, end), (pid, address), token),
            Frame::PutDone { receiver, len, .. } => self.add_received(peer, receiver, usize::try_from(len).unwrap_or(usize::MAX)),
            Frame::Cancel { context, sender } => {
                self.answer_cancel(peer, context, sender);
                Ok(())
            }
            Frame::Cancelled { sender, outcome } => self.settle_cancel(peer, sender, outcome),
        }
    }
}
