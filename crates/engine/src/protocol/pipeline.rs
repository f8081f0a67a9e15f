//! The two-copy pipeline on a direct transport: the sender streams a rendezvous payload as
//! DATA frames, each as large as the transport carries, whenever the transport has room; the
//! receiver copies each into place (`rendezvous.rs`, `arrive_data`).

use braid_lane::PeerId;
use braid_transport::SendOutcome;

use crate::frame::Frame;
use crate::{gather, transport_error, Engine, EngineError};

/// A two-copy rendezvous being streamed by the sender.
#[derive(Clone, Copy)]
pub(crate) struct Stream {
    pub(crate) request: u32,
    pub(crate) peer: PeerId,
    pub(crate) transport: usize,
    pub(crate) receiver: u32,
    pub(crate) data: &'static [u8],
    pub(crate) offset: usize,
    pub(crate) chunk: usize,
    /// Whether the last chunk completes the send (false for the rest of a shared copy, whose
    /// send completes on the receiver's FIN).
    pub(crate) completes: bool,
}

impl Engine {
    /// Streams pipeline chunks while the transports have room.
    pub(crate) fn advance_streams(&mut self) -> Result<bool, EngineError> {
        let mut moved = false;
        let mut index = 0;
        while index < self.core.streams.len() {
            let mut stream = self.core.streams[index];
            let transport = &mut self.transports[stream.transport];
            // Frames already queued to this peer (a FIN, an ACK) go first.
            while stream.offset < stream.data.len() && !self.core.endpoints[stream.peer as usize].lane.queued {
                let end = stream.offset + stream.chunk.min(stream.data.len() - stream.offset);
                let header = Frame::Data { receiver: stream.receiver, offset: stream.offset as u64 }.encode();
                match transport.try_send(stream.peer, header.as_bytes(), &gather(&stream.data[stream.offset..end])) {
                    Ok(SendOutcome::Sent) => {
                        self.core.counters.frame_sent(stream.peer, end - stream.offset);
                        stream.offset = end;
                        moved = true;
                    }
                    Ok(SendOutcome::WouldBlock) => break,
                    Err(error) => return Err(transport_error(transport.as_ref(), stream.peer, error)),
                }
            }
            if stream.offset == stream.data.len() {
                self.core.streams.swap_remove(index);
                if stream.completes {
                    self.core.endpoints[stream.peer as usize].rendezvous_ended();
                    self.core.complete_send(stream.peer, stream.request)?;
                }
            } else {
                self.core.streams[index] = stream;
                index += 1;
            }
        }
        Ok(moved)
    }
}
