//! The engine's frame headers: compact little-endian records, at most 45 bytes, whose first byte
//! names the kind. Transports carry them opaquely.
//!
//! Peers reached over the network rails add three kinds: a CONTROL envelope (a sequence number
//! and a cumulative acknowledgement around one of the frames above, so a control frame lost with
//! a failed rail is re-sent on another and a duplicate is recognised), a bare NET_ACK, and
//! NET_DATA, a rendezvous chunk tagged with its transfer (the sequence number of the CTS that
//! asked for it) so a chunk re-sent after a failover cannot land in a later receive.
//! NET_BATCH carries several CONTROL frames in one (aggregation, Brunet, Trahay and Denis 2008, section III-D): its
//! payload is a run of entries `[header length: u8][payload length: u32][header][payload]`.

use braid_transport::{RemoteRegion, MAX_HEADER};

const EAGER: u8 = 1;
const EAGER_SYNC: u8 = 2;
const RTS: u8 = 3;
const FIN: u8 = 4;
const CTS: u8 = 5;
const DATA: u8 = 6;
const ACK: u8 = 7;
const CONTROL: u8 = 8;
const NET_ACK: u8 = 9;
const NET_DATA: u8 = 10;
/// NET_DATA's kind byte, for the tests that forge frames.
#[cfg(test)]
pub(crate) const NET_DATA_KIND: u8 = NET_DATA;
/// A rail sampling ping-pong frame (seen only by `sampling`, before the engine starts).
pub(crate) const SAMPLE: u8 = 11;
const NET_BATCH: u8 = 12;
const PUT: u8 = 13;
const PUT_DONE: u8 = 14;
const CANCEL: u8 = 15;
const CANCELLED: u8 = 16;

/// Header length of a plain EAGER frame.
const EAGER_HEADER: usize = 9;
/// The longest eager header (EAGER_SYNC); the eager limit leaves room for it.
pub(crate) const EAGER_HEADER_MAX: usize = 13;
/// Header length of a DATA frame; pipeline chunks leave room for it.
pub(crate) const DATA_HEADER: usize = 13;

/// Bytes the CONTROL envelope adds in front of a frame.
pub(crate) const CONTROL_OVERHEAD: usize = 17;
/// Header length of a NET_DATA frame.
pub(crate) const NET_DATA_HEADER: usize = 21;
/// Bytes a NET_BATCH entry adds in front of a frame's header.
pub(crate) const BATCH_ENTRY_OVERHEAD: usize = 5;

/// One frame's header. Request ids are the engine-local `RequestId` numbers of the rank named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame {
    /// A whole message; the payload is the data.
    Eager { context: u32, tag: i32 },
    /// A whole message whose sender waits for an ACK once it has matched.
    EagerSync { context: u32, tag: i32, sender: u32 },
    /// Ready to send `len` bytes that the receiver may read at `address` in process `pid`.
    Rts { context: u32, tag: i32, len: u64, sender: u32, pid: i32, address: u64 },
    /// The receiver has read the sender's buffer: the send is complete.
    Fin { sender: u32 },
    /// The receiver asks for `len` bytes through the pipeline, as DATA frames.
    Cts { sender: u32, receiver: u32, len: u64 },
    /// A pipeline chunk for the receiver's request, placed at `offset`; the payload is the chunk.
    Data { receiver: u32, offset: u64 },
    /// A synchronous eager message has matched.
    Ack { sender: u32 },
    /// The receiver offers (under the transport's `token`) to share a single-copy rendezvous:
    /// if the sender claims the offer, it writes its bytes `[offset, end)` into process `pid` at
    /// `address + offset` (`address` is the receive buffer's start).
    Put { sender: u32, receiver: u32, offset: u64, end: u64, pid: i32, address: u64, token: u64 },
    /// The sender has written `len` bytes of its share (the rest, if any, comes as DATA).
    PutDone { sender: u32, receiver: u32, len: u64 },
    /// The sender asks to withdraw its message (an RTS or EAGER_SYNC naming send `sender`, in
    /// `context`) if the receiver has not matched it yet.
    Cancel { context: u32, sender: u32 },
    /// The answer to CANCEL: whether the message was withdrawn, and which kind it was.
    Cancelled { sender: u32, outcome: CancelOutcome },
}

/// What the receiver of a CANCEL found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CancelOutcome {
    /// The message had matched already (or was never one that can be withdrawn).
    Matched,
    /// An eager message was taken out of the unexpected queue.
    WithdrawnEager,
    /// A rendezvous announcement was taken out of the unexpected queue.
    WithdrawnRendezvous,
}

impl CancelOutcome {
    fn code(self) -> u8 {
        match self {
            CancelOutcome::Matched => 0,
            CancelOutcome::WithdrawnEager => 1,
            CancelOutcome::WithdrawnRendezvous => 2,
        }
    }

    fn from_code(code: u8) -> Option<CancelOutcome> {
        match code {
            0 => Some(CancelOutcome::Matched),
            1 => Some(CancelOutcome::WithdrawnEager),
            2 => Some(CancelOutcome::WithdrawnRendezvous),
            _ => None,
        }
    }
}

/// An encoded header, kept by value so queued frames need no allocation.
#[derive(Clone, Copy)]
pub(crate) struct Header {
    bytes: [u8; MAX_HEADER],
    len: u8,
}

impl Header {
    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// A CONTROL envelope: sequence number `seq`, everything up to `ack` received, then `inner`.
    pub(crate) fn control(seq: u64, ack: u64, inner: &Header) -> Header {
        Writer::new(CONTROL).put(&seq.to_le_bytes()).put(&ack.to_le_bytes()).put(inner.as_bytes()).header
    }

    /// A bare cumulative acknowledgement of control frames up to `ack`.
    pub(crate) fn net_ack(ack: u64) -> Header {
        Writer::new(NET_ACK).put(&ack.to_le_bytes()).header
    }

    /// The header of a NET_BATCH frame (its payload holds the frames, see [`push_batch_entry`]).
    pub(crate) fn net_batch() -> Header {
        Writer::new(NET_BATCH).header
    }

    /// A rendezvous chunk for `receiver`'s request at `offset`, of transfer `transfer`.
    pub(crate) fn net_data(receiver: u32, offset: u64, transfer: u64) -> Header {
        Writer::new(NET_DATA).put(&receiver.to_le_bytes()).put(&offset.to_le_bytes()).put(&transfer.to_le_bytes()).header
    }
}

/// A frame that only travels over the network rails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NetFrame<'a> {
    Control {
        seq: u64,
        ack: u64,
        inner: &'a [u8],
    },
    Ack {
        ack: u64,
    },
    Data {
        receiver: u32,
        offset: u64,
        transfer: u64,
    },
    /// Several CONTROL frames; the payload holds them (see [`batch_entries`]).
    Batch,
}

/// Appends a frame (`header`, `payload`) to the payload of a NET_BATCH frame.
pub(crate) fn push_batch_entry(batch: &mut Vec<u8>, header: &[u8], payload: &[u8]) {
    batch.push(header.len() as u8);
    batch.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    batch.extend_from_slice(header);
    batch.extend_from_slice(payload);
}

/// The frames in a NET_BATCH payload, as (header, payload); an `Err` item ends a malformed one.
pub(crate) fn batch_entries(mut batch: &[u8]) -> impl Iterator<Item = Result<(&[u8], &[u8]), ()>> {
    std::iter::from_fn(move || {
        if batch.is_empty() {
            return None;
        }
        let entry = (|| {
            let (&header_len, rest) = batch.split_first()?;
            let (payload_len, rest) = rest.split_first_chunk::<4>()?;
            let payload_len = u32::from_le_bytes(*payload_len) as usize;
            let (header, rest) = rest.split_at_checked(header_len as usize)?;
            let (payload, rest) = rest.split_at_checked(payload_len)?;
            Some((header, payload, rest))
        })();
        match entry {
            Some((header, payload, rest)) => {
                batch = rest;
                Some(Ok((header, payload)))
            }
            None => {
                batch = &[];
                Some(Err(()))
            }
        }
    })
}

impl NetFrame<'_> {
    /// Whether `header` is one of the network kinds (the rest is decoded by [`Frame::decode`]).
    #[inline]
    pub(crate) fn is_network(header: &[u8]) -> bool {
        header.first().is_some_and(|&kind| matches!(kind, CONTROL..=NET_DATA | NET_BATCH))
    }

    /// Parses a network header; `None` if it is malformed.
    pub(crate) fn decode(bytes: &[u8]) -> Option<NetFrame<'_>> {
        let (&kind, rest) = bytes.split_first()?;
        let mut r = Reader { rest };
        let frame = match kind {
            CONTROL => return Some(NetFrame::Control { seq: r.u64()?, ack: r.u64()?, inner: r.rest }),
            NET_ACK => NetFrame::Ack { ack: r.u64()? },
            NET_DATA => NetFrame::Data { receiver: r.u32()?, offset: r.u64()?, transfer: r.u64()? },
            NET_BATCH => NetFrame::Batch,
            _ => return None,
        };
        r.rest.is_empty().then_some(frame)
    }
}

struct Writer {
    header: Header,
}

impl Writer {
    #[inline]
    fn new(kind: u8) -> Writer {
        let mut header = Header { bytes: [0; MAX_HEADER], len: 1 };
        header.bytes[0] = kind;
        Writer { header }
    }

    #[inline]
    fn put(mut self, bytes: &[u8]) -> Writer {
        let start = self.header.len as usize;
        self.header.bytes[start..start + bytes.len()].copy_from_slice(bytes);
        self.header.len += bytes.len() as u8;
        self
    }
}

struct Reader<'a> {
    rest: &'a [u8],
}

impl Reader<'_> {
    #[inline]
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, tail) = self.rest.split_first_chunk::<N>()?;
        self.rest = tail;
        Some(*head)
    }
    fn u32(&mut self) -> Option<u32> {
        self.take().map(u32::from_le_bytes)
    }
    fn i32(&mut self) -> Option<i32> {
        self.take().map(i32::from_le_bytes)
    }
    fn u64(&mut self) -> Option<u64> {
        self.take().map(u64::from_le_bytes)
    }
    fn outcome(&mut self) -> Option<CancelOutcome> {
        self.take::<1>().and_then(|[code]| CancelOutcome::from_code(code))
    }
}

impl Frame {
    pub(crate) fn rts(context: u32, tag: i32, sender: u32, region: RemoteRegion) -> Frame {
        Frame::Rts { context, tag, len: region.len, sender, pid: region.pid, address: region.address }
    }

    #[inline]
    pub(crate) fn encode(&self) -> Header {
        let writer = match *self {
            Frame::Eager { context, tag } => Writer::new(EAGER).put(&context.to_le_bytes()).put(&tag.to_le_bytes()),
            Frame::EagerSync { context, tag, sender } => Writer::new(EAGER_SYNC).put(&context.to_le_bytes()).put(&tag.to_le_bytes()).put(&sender.to_le_bytes()),
            Frame::Rts { context, tag, len, sender, pid, address } => {
                Writer::new(RTS).put(&context.to_le_bytes()).put(&tag.to_le_bytes()).put(&len.to_le_bytes()).put(&sender.to_le_bytes()).put(&pid.to_le_bytes()).put(&address.to_le_bytes())
            }
            Frame::Fin { sender } => Writer::new(FIN).put(&sender.to_le_bytes()),
            Frame::Cts { sender, receiver, len } => Writer::new(CTS).put(&sender.to_le_bytes()).put(&receiver.to_le_bytes()).put(&len.to_le_bytes()),
            Frame::Data { receiver, offset } => Writer::new(DATA).put(&receiver.to_le_bytes()).put(&offset.to_le_bytes()),
            Frame::Ack { sender } => Writer::new(ACK).put(&sender.to_le_bytes()),
            Frame::Put { sender, receiver, offset, end, pid, address, token } => Writer::new(PUT)
                .put(&sender.to_le_bytes())
                .put(&receiver.to_le_bytes())
                .put(&offset.to_le_bytes())
                .put(&end.to_le_bytes())
                .put(&pid.to_le_bytes())
                .put(&address.to_le_bytes())
                .put(&token.to_le_bytes()),
            Frame::PutDone { sender, receiver, len } => Writer::new(PUT_DONE).put(&sender.to_le_bytes()).put(&receiver.to_le_bytes()).put(&len.to_le_bytes()),
            Frame::Cancel { context, sender } => Writer::new(CANCEL).put(&context.to_le_bytes()).put(&sender.to_le_bytes()),
            Frame::Cancelled { sender, outcome } => Writer::new(CANCELLED).put(&sender.to_le_bytes()).put(&[outcome.code()]),
        };
        writer.header
    }

    /// A plain EAGER header, written in place: what [`Frame::encode`] writes for
    /// `Frame::Eager { context, tag }`, without the general encoder on the send hot path.
    #[inline(always)]
    pub(crate) fn eager_bytes(context: u32, tag: i32) -> [u8; EAGER_HEADER] {
        let [c0, c1, c2, c3] = context.to_le_bytes();
        let [t0, t1, t2, t3] = tag.to_le_bytes();
        [EAGER, c0, c1, c2, c3, t0, t1, t2, t3]
    }

    /// The context and tag of a plain EAGER header, read in place: the commonest frame skips the
    /// general decoder on the receive hot path. `None` for any other header.
    #[inline(always)]
    pub(crate) fn eager_fields(bytes: &[u8]) -> Option<(u32, i32)> {
        let bytes: &[u8; EAGER_HEADER] = bytes.try_into().ok()?;
        let [kind, c0, c1, c2, c3, t0, t1, t2, t3] = *bytes;
        (kind == EAGER).then_some((u32::from_le_bytes([c0, c1, c2, c3]), i32::from_le_bytes([t0, t1, t2, t3])))
    }

    /// Parses a header; `None` if it is malformed.
    #[inline]
    pub(crate) fn decode(bytes: &[u8]) -> Option<Frame> {
        let (&kind, rest) = bytes.split_first()?;
        let mut r = Reader { rest };
        let frame = match kind {
            EAGER => Frame::Eager { context: r.u32()?, tag: r.i32()? },
            EAGER_SYNC => Frame::EagerSync { context: r.u32()?, tag: r.i32()?, sender: r.u32()? },
            RTS => Frame::Rts { context: r.u32()?, tag: r.i32()?, len: r.u64()?, sender: r.u32()?, pid: r.i32()?, address: r.u64()? },
            FIN => Frame::Fin { sender: r.u32()? },
            CTS => Frame::Cts { sender: r.u32()?, receiver: r.u32()?, len: r.u64()? },
            DATA => Frame::Data { receiver: r.u32()?, offset: r.u64()? },
            ACK => Frame::Ack { sender: r.u32()? },
            PUT => Frame::Put { sender: r.u32()?, receiver: r.u32()?, offset: r.u64()?, end: r.u64()?, pid: r.i32()?, address: r.u64()?, token: r.u64()? },
            PUT_DONE => Frame::PutDone { sender: r.u32()?, receiver: r.u32()?, len: r.u64()? },
            CANCEL => Frame::Cancel { context: r.u32()?, sender: r.u32()? },
            CANCELLED => Frame::Cancelled { sender: r.u32()?, outcome: r.outcome()? },
            _ => return None,
        };
        r.rest.is_empty().then_some(frame)
    }
}

/// Hostile headers: whatever arrives, decoding answers without panicking, and what it accepts is
/// exactly what encoding that frame gives back (no slack bytes, no second spelling). The case
/// count follows PROPTEST_CASES (scripts/fuzz runs 10^7).
#[cfg(test)]
mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_bytes_decode_to_nothing_or_to_their_own_encoding(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            if let Some(frame) = Frame::decode(&bytes) {
                let encoded = frame.encode();
                prop_assert_eq!(encoded.as_bytes(), &bytes[..]);
            }
            if let Some(NetFrame::Control { inner, .. }) = NetFrame::decode(&bytes) {
                prop_assert!(inner.len() < bytes.len());
                let _ = Frame::decode(inner);
            }
            let _ = Frame::eager_fields(&bytes);
            let _ = NetFrame::is_network(&bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_and_fits() {
        let frames = [
            Frame::Eager { context: 7, tag: -3 },
            Frame::EagerSync { context: u32::MAX, tag: i32::MAX, sender: 42 },
            Frame::Rts { context: 1, tag: 2, len: 8 << 20, sender: 9, pid: 1234, address: 0xdead_beef_0000 },
            Frame::Fin { sender: 5 },
            Frame::Cts { sender: 5, receiver: 6, len: 1 << 40 },
            Frame::Data { receiver: 6, offset: 65536 },
            Frame::Ack { sender: 11 },
            Frame::Put { sender: 3, receiver: 4, offset: 1 << 19, end: 1 << 20, pid: 77, address: 0x7f00_dead_0000, token: 12 },
            Frame::PutDone { sender: 3, receiver: 4, len: 1 << 19 },
            Frame::Cancel { context: 9, sender: 12 },
            Frame::Cancelled { sender: 12, outcome: CancelOutcome::Matched },
            Frame::Cancelled { sender: 13, outcome: CancelOutcome::WithdrawnEager },
            Frame::Cancelled { sender: 14, outcome: CancelOutcome::WithdrawnRendezvous },
        ];
        for frame in frames {
            let header = frame.encode();
            assert!(header.as_bytes().len() <= MAX_HEADER);
            assert_eq!(Frame::decode(header.as_bytes()), Some(frame));
            let in_place = match frame {
                Frame::Eager { context, tag } => Some((context, tag)),
                _ => None,
            };
            assert_eq!(Frame::eager_fields(header.as_bytes()), in_place, "{frame:?}");
            if let Frame::Eager { context, tag } = frame {
                assert_eq!(Frame::eager_bytes(context, tag).as_slice(), header.as_bytes());
            }
        }
        assert_eq!(Frame::EagerSync { context: 0, tag: 0, sender: 0 }.encode().as_bytes().len(), EAGER_HEADER_MAX);
        assert_eq!(Frame::Data { receiver: 0, offset: 0 }.encode().as_bytes().len(), DATA_HEADER);
    }

    #[test]
    fn network_frames_round_trip_and_fit() {
        let inner = Frame::Rts { context: 1, tag: 2, len: 8 << 20, sender: 9, pid: 1234, address: 0xdead_beef_0000 }.encode();
        let control = Header::control(u64::MAX - 1, 77, &inner);
        assert!(control.as_bytes().len() <= MAX_HEADER);
        assert_eq!(control.as_bytes().len(), inner.as_bytes().len() + CONTROL_OVERHEAD);
        let Some(NetFrame::Control { seq, ack, inner: decoded }) = NetFrame::decode(control.as_bytes()) else { panic!("not a control frame") };
        assert_eq!((seq, ack), (u64::MAX - 1, 77));
        assert_eq!(Frame::decode(decoded), Frame::decode(inner.as_bytes()));
        assert_eq!(NetFrame::decode(Header::net_ack(5).as_bytes()), Some(NetFrame::Ack { ack: 5 }));
        let data = Header::net_data(3, 1 << 33, 9);
        assert_eq!(data.as_bytes().len(), NET_DATA_HEADER);
        assert_eq!(NetFrame::decode(data.as_bytes()), Some(NetFrame::Data { receiver: 3, offset: 1 << 33, transfer: 9 }));
        assert!(NetFrame::is_network(data.as_bytes()));
        assert!(NetFrame::is_network(Header::net_batch().as_bytes()));
        assert_eq!(NetFrame::decode(Header::net_batch().as_bytes()), Some(NetFrame::Batch));
        assert!(!NetFrame::is_network(inner.as_bytes()));
        assert_eq!(Frame::decode(data.as_bytes()), None);
        assert_eq!(NetFrame::decode(&data.as_bytes()[..20]), None);
        assert_eq!(NetFrame::decode(inner.as_bytes()), None);
    }

    #[test]
    fn malformed_headers_are_rejected() {
        assert_eq!(Frame::decode(&[]), None);
        assert_eq!(Frame::decode(&[99, 0, 0, 0, 0]), None);
        let header = Frame::Fin { sender: 1 }.encode();
        assert_eq!(Frame::decode(&header.as_bytes()[..3]), None);
        let mut long = header.as_bytes().to_vec();
        long.push(0);
        assert_eq!(Frame::decode(&long), None);
        let mut unknown_outcome = Frame::Cancelled { sender: 1, outcome: CancelOutcome::Matched }.encode().as_bytes().to_vec();
        *unknown_outcome.last_mut().unwrap() = 3;
        assert_eq!(Frame::decode(&unknown_outcome), None);
    }

    #[test]
    fn batch_entries_come_back_in_order_and_a_cut_batch_is_malformed() {
        let first = Header::control(1, 0, &Frame::Eager { context: 1, tag: 2 }.encode());
        let second = Header::control(2, 0, &Frame::Fin { sender: 3 }.encode());
        let mut batch = Vec::new();
        push_batch_entry(&mut batch, first.as_bytes(), b"hello");
        push_batch_entry(&mut batch, second.as_bytes(), b"");
        assert_eq!(batch.len(), 2 * BATCH_ENTRY_OVERHEAD + first.as_bytes().len() + second.as_bytes().len() + 5);
        let entries: Vec<_> = batch_entries(&batch).collect();
        assert_eq!(entries, vec![Ok((first.as_bytes(), &b"hello"[..])), Ok((second.as_bytes(), &b""[..]))]);
        let cut: Vec<_> = batch_entries(&batch[..batch.len() - 1]).collect();
        assert_eq!(cut.len(), 2);
        assert_eq!(cut[1], Err(()));
        assert_eq!(batch_entries(&[]).count(), 0);
    }
}
