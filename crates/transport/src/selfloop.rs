//! The self transport: frames a rank sends to itself, queued in order and handed back by the next
//! `poll`. Frame buffers are recycled, so a steady stream allocates nothing after warm-up.

use std::collections::VecDeque;
use std::io::IoSlice;

use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::Bootstrap;

use crate::{Incoming, Payload, SendOutcome, Transport, TransportError, MAX_HEADER};

/// Recycled frame buffers kept for reuse; more are freed.
const SPARE_BUFFERS: usize = 16;

struct Frame {
    bytes: Vec<u8>,
    header_len: usize,
}

/// Loopback to this very rank.
pub struct SelfTransport {
    rank: Option<PeerId>,
    queue: VecDeque<Frame>,
    spare: Vec<Vec<u8>>,
    profile: Profile,
}

impl SelfTransport {
    pub fn new() -> SelfTransport {
        SelfTransport { rank: None, queue: VecDeque::new(), spare: Vec::new(), profile: Profile::from_model(50.0, 8e9, 1 << 24) }
    }

    #[inline(never)]
    fn deliver_queued(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        let Some(rank) = self.rank else { return 0 };
        let ready = self.queue.len();
        for _ in 0..ready {
            let Frame { bytes, header_len } = self.queue.pop_front().expect("counted frame");
            let (header, payload) = bytes.split_at(header_len);
            deliver(Incoming { peer: rank, header, payload: Payload::Complete(payload) });
            if self.spare.len() < SPARE_BUFFERS {
                self.spare.push(bytes);
            }
        }
        ready
    }
}

impl Default for SelfTransport {
    fn default() -> Self {
        SelfTransport::new()
    }
}

impl Transport for SelfTransport {
    fn name(&self) -> &str {
        "self"
    }

    fn capabilities(&self) -> Capabilities {
        // A sleeping rank cannot be sending to itself, so every self frame is already queued when
        // the poll after `prepare_sleep` runs: this transport never needs to wake anyone.
        Capabilities { max_payload: usize::MAX, max_inline: usize::MAX, remote_read: false, wakes_receiver: true }
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn connect(&mut self, bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        self.rank = Some(bootstrap.rank());
        Ok(())
    }

    fn reaches(&self, peer: PeerId) -> bool {
        self.rank == Some(peer)
    }

    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        if !self.reaches(peer) {
            return Err(TransportError::Unreachable(peer));
        }
        if header.len() > MAX_HEADER {
            return Err(TransportError::Unsupported("frame header longer than MAX_HEADER"));
        }
        let mut bytes = self.spare.pop().unwrap_or_default();
        bytes.clear();
        bytes.extend_from_slice(header);
        for slice in payload {
            bytes.extend_from_slice(slice);
        }
        self.queue.push_back(Frame { bytes, header_len: header.len() });
        Ok(SendOutcome::Sent)
    }

    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        // Every progress step polls this transport, and nearly always finds it empty.
        if self.queue.is_empty() {
            return 0;
        }
        self.deliver_queued(deliver)
    }

    fn prepare_sleep(&mut self) -> Option<u32> {
        Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_pmi::threads::ThreadBootstrap;

    #[test]
    fn frames_come_back_in_order_on_the_next_poll() {
        let mut transport = SelfTransport::new();
        assert_eq!(transport.try_send(0, b"h", &[]), Err(TransportError::Unreachable(0)));
        let mut bootstrap = ThreadBootstrap::job("braid-selfloop-unit", 1).pop().unwrap();
        transport.connect(&mut bootstrap).unwrap();
        assert!(transport.reaches(0) && !transport.reaches(1));
        for i in 0..3u8 {
            let outcome = transport.try_send(0, &[i], &[IoSlice::new(b"ab"), IoSlice::new(&[i; 3])]).unwrap();
            assert_eq!(outcome, SendOutcome::Sent);
        }
        let mut seen = Vec::new();
        let count = transport.poll(&mut |frame| seen.push((frame.peer, frame.header.to_vec(), frame.payload.whole().to_vec())));
        assert_eq!(count, 3);
        for (i, (peer, header, payload)) in seen.into_iter().enumerate() {
            let i = i as u8;
            assert_eq!((peer, header, payload), (0, vec![i], vec![b'a', b'b', i, i, i]));
        }
        assert_eq!(transport.poll(&mut |_| panic!("nothing left")), 0);
        assert_eq!(transport.spare.len(), 3, "buffers are recycled");
    }
}
