//! The engine's frame headers: compact little-endian records, at most 33 bytes, whose first byte
//! names the kind. Transports carry them opaquely.

use braid_transport::{RemoteRegion, MAX_HEADER};

const EAGER: u8 = 1;
const EAGER_SYNC: u8 = 2;
const RTS: u8 = 3;
const FIN: u8 = 4;
const CTS: u8 = 5;
const DATA: u8 = 6;
const ACK: u8 = 7;

/// The longest eager header (EAGER_SYNC); the eager limit leaves room for it.
pub(crate) const EAGER_HEADER_MAX: usize = 13;
/// Header length of a DATA frame; pipeline chunks leave room for it.
pub(crate) const DATA_HEADER: usize = 13;

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
}

impl Frame {
    pub(crate) fn rts(context: u32, tag: i32, sender: u32, region: RemoteRegion) -> Frame {
        Frame::Rts { context, tag, len: region.len, sender, pid: region.pid, address: region.address }
    }

    #[inline]
    pub(crate) fn encode(&self) -> Header {
        let writer = match *self {
            Frame::Eager { context, tag } => Writer::new(EAGER).put(&context.to_le_bytes()).put(&tag.to_le_bytes()),
            Frame::EagerSync { context, tag, sender } => {
                Writer::new(EAGER_SYNC).put(&context.to_le_bytes()).put(&tag.to_le_bytes()).put(&sender.to_le_bytes())
            }
            Frame::Rts { context, tag, len, sender, pid, address } => Writer::new(RTS)
                .put(&context.to_le_bytes())
                .put(&tag.to_le_bytes())
                .put(&len.to_le_bytes())
                .put(&sender.to_le_bytes())
                .put(&pid.to_le_bytes())
                .put(&address.to_le_bytes()),
            Frame::Fin { sender } => Writer::new(FIN).put(&sender.to_le_bytes()),
            Frame::Cts { sender, receiver, len } => {
                Writer::new(CTS).put(&sender.to_le_bytes()).put(&receiver.to_le_bytes()).put(&len.to_le_bytes())
            }
            Frame::Data { receiver, offset } => Writer::new(DATA).put(&receiver.to_le_bytes()).put(&offset.to_le_bytes()),
            Frame::Ack { sender } => Writer::new(ACK).put(&sender.to_le_bytes()),
        };
        writer.header
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
            _ => return None,
        };
        r.rest.is_empty().then_some(frame)
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
        ];
        for frame in frames {
            let header = frame.encode();
            assert!(header.as_bytes().len() <= MAX_HEADER);
            assert_eq!(Frame::decode(header.as_bytes()), Some(frame));
        }
        assert_eq!(Frame::EagerSync { context: 0, tag: 0, sender: 0 }.encode().as_bytes().len(), EAGER_HEADER_MAX);
        assert_eq!(Frame::Data { receiver: 0, offset: 0 }.encode().as_bytes().len(), DATA_HEADER);
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
    }
}
