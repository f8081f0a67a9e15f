//! One peer's connection on a rail: frames written whole or queued behind a short write, the
//! send queue's length, reads in blocks and payloads placed where the sink says, and the writer
//! lent to an offload worker (see the transport's module comment).

use std::cell::Cell;
use std::io::{self, IoSlice, Read};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use braid_lane::PeerId;
use braid_sys::net::{self as sysnet, Poller};

use super::{MAX_PAYLOAD, PENDING_BYTES_MAX, PENDING_FRAMES_MAX, PLACE_MIN};
use crate::{FrameWriter, Incoming, Payload, Sink, TransportError, MAX_HEADER};

pub(super) const FRAME_PREFIX: usize = 8;
const MAX_FRAME: usize = FRAME_PREFIX + MAX_HEADER + MAX_PAYLOAD;
/// Slices passed to one `sendmsg` (prefix, header, payload slices); more are sent in windows.
const GATHER_MAX: usize = 16;
pub(super) const RECEIVE_BUFFER_INITIAL: usize = 64 << 10;
/// A read into less room than this first makes room (see `Connection::make_room`).
pub(super) const READ_MIN: usize = 16 << 10;
/// Longest single wait of a lent writer for room in the socket; it then tries again.
const WRITER_WAIT: Duration = Duration::from_millis(100);
/// Reads from one connection per `poll`, so one busy peer cannot starve the others.
const READS_PER_POLL: usize = 32;

/// One peer on this rail.
pub(super) struct Connection {
    pub(super) peer: PeerId,
    /// `None` once the peer is down.
    pub(super) stream: Option<TcpStream>,
    /// Bytes accepted by `try_send` but not yet taken by the kernel: `pending[pending_sent..]`.
    pub(super) pending: Vec<u8>,
    pub(super) pending_sent: usize,
    /// Frames appended since the pending buffer was last empty.
    pending_frames: usize,
    /// A write came back short: nothing is written until epoll reports room (see the module
    /// comment); the connection's output is watched while this holds.
    pub(super) waiting_for_room: bool,
    /// Bytes this transport handed to the kernel (lent writers not counted).
    pub(super) handed_over: u64,
    /// The kernel send queue as last read: the transport's poll count then, the queue, and
    /// `handed_over` then.
    pub(super) kernel_queue: Cell<Option<(u64, u64, u64)>>,
    /// Received bytes not yet delivered: `received[received_start..received_end]`.
    pub(super) received: Vec<u8>,
    pub(super) received_start: usize,
    pub(super) received_end: usize,
    /// The last read filled the buffer's free space: more was probably waiting.
    pub(super) read_filled: bool,
    /// A payload being received straight into the place the sink gave for it.
    placing: Option<Placing>,
    /// The last frame's payload was placed: the next read takes only a frame's front (see the
    /// module comment).
    placed_last: bool,
    /// Send-queue (`SIOCOUTQ`) reads so far.
    pub(super) queue_reads: Cell<u64>,
    /// Placed payload bytes received straight into their place, and those copied there from the
    /// receive buffer (read before the frame's header was seen).
    pub(super) placed_directly: u64,
    pub(super) placed_by_copy: u64,
    /// The socket duplicate lent writers write through, made on the first loan.
    pub(super) loan: Option<Arc<Loan>>,
    /// Why the peer was marked down, once it was.
    pub(super) down_reason: Option<String>,
}

/// A payload being placed: its frame's header, its length, the bytes in place so far; `dropping`
/// once the sink declined it after it was begun (its remaining bytes are read and dropped).
pub(super) struct Placing {
    header: [u8; MAX_HEADER],
    header_len: usize,
    len: usize,
    filled: usize,
    dropping: bool,
}

/// What a lent writer shares with its connection.
pub(super) struct Loan {
    pub(super) stream: TcpStream,
    /// A writer is out: the transport itself must not write to this peer.
    pub(super) lent: AtomicBool,
}

/// Why a connection must be marked down.
#[derive(Debug)]
pub(super) enum Broken {
    /// It was marked down before.
    Down,
    /// The peer closed it; `in_frame` bytes of a frame not yet whole had arrived.
    Closed { in_frame: usize },
    /// A frame's prefix gives lengths no sender of this transport writes: the peer is not
    /// trusted for the bytes that would follow.
    Malformed { header_len: u64, payload_len: u64 },
    /// A read, write or epoll call failed.
    Failed(io::ErrorKind),
}

impl From<io::Error> for Broken {
    fn from(error: io::Error) -> Broken {
        Broken::Failed(error.kind())
    }
}

impl std::fmt::Display for Broken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Broken::Down => write!(f, "the connection was closed before"),
            Broken::Closed { in_frame: 0 } => write!(f, "the peer closed the connection"),
            Broken::Closed { in_frame } => write!(f, "the peer closed the connection {in_frame} bytes into a frame (a truncated frame)"),
            Broken::Malformed { header_len, payload_len } => {
                write!(f, "the peer sent a malformed frame (a {header_len}-byte header and a {payload_len}-byte payload; at most {MAX_HEADER} and {MAX_PAYLOAD} bytes are allowed)")
            }
            Broken::Failed(kind) => write!(f, "the connection failed ({kind})"),
        }
    }
}

impl Connection {
    pub(super) fn new(peer: PeerId, stream: TcpStream) -> Connection {
        Connection {
            peer,
            stream: Some(stream),
            pending: Vec::new(),
            pending_sent: 0,
            pending_frames: 0,
            waiting_for_room: false,
            handed_over: 0,
            kernel_queue: Cell::new(None),
            received: Vec::new(),
            received_start: 0,
            received_end: 0,
            read_filled: false,
            placing: None,
            placed_last: false,
            queue_reads: Cell::new(0),
            placed_directly: 0,
            placed_by_copy: 0,
            loan: None,
            down_reason: None,
        }
    }

    pub(super) fn is_lent(&self) -> bool {
        self.loan.as_ref().is_some_and(|loan| loan.lent.load(Ordering::Acquire))
    }

    pub(super) fn unsent(&self) -> usize {
        self.pending.len() - self.pending_sent
    }

    pub(super) fn has_room(&self, frame_len: usize) -> bool {
        self.pending_frames < PENDING_FRAMES_MAX && self.unsent() + frame_len <= PENDING_BYTES_MAX
    }

    /// One attempt to hand the pending bytes to the kernel; true when none are left.
    pub(super) fn flush(&mut self) -> Result<bool, Broken> {
        let Some(stream) = &self.stream else { return Err(Broken::Down) };
        if self.unsent() == 0 {
            return Ok(true);
        }
        match sysnet::send_vectored(stream.as_fd(), &[IoSlice::new(&self.pending[self.pending_sent..])]) {
            Ok(written) => {
                self.pending_sent += written;
                self.handed_over += written as u64;
            }
            Err(error) if transient(&error) => {}
            Err(error) => return Err(error.into()),
        }
        if self.pending_sent == self.pending.len() {
            self.pending.clear();
            self.pending_sent = 0;
            self.pending_frames = 0;
            return Ok(true);
        }
        Ok(false)
    }

    /// Queues `frame` minus its first `skip` bytes behind the pending bytes.
    pub(super) fn append(&mut self, frame: &FramePieces<'_, '_>, skip: usize) {
        if self.pending_sent > 0 {
            self.pending.drain(..self.pending_sent);
            self.pending_sent = 0;
        }
        let mut skip = skip;
        for index in 0..frame.count() {
            let piece = frame.piece(index);
            let start = skip.min(piece.len());
            skip -= start;
            self.pending.extend_from_slice(&piece[start..]);
        }
        self.pending_frames += 1;
    }

    /// Kernel send queue plus pending bytes. The queue is read once per `polls` (the
    /// transport's poll count: once between two polls, see the module comment), except while a
    /// writer is lent (its writes are not counted here).
    pub(super) fn backlog(&self, polls: u64) -> u64 {
        let Some(stream) = &self.stream else { return 0 };
        let queued = match self.kernel_queue.get() {
            Some((read_at, queued, handed_over)) if read_at == polls && !self.is_lent() => queued + (self.handed_over - handed_over),
            _ => {
                let queued = sysnet::send_queue_len(stream.as_fd()).unwrap_or(0);
                self.queue_reads.set(self.queue_reads.get() + 1);
                self.kernel_queue.set(Some((polls, queued, self.handed_over)));
                queued
            }
        };
        queued + self.unsent() as u64
    }

    /// Reads what has arrived and delivers every complete frame, in order, or places its payload
    /// where the sink says; the receive buffer grows up to `block` bytes.
    pub(super) fn receive(&mut self, block: usize, sink: &mut dyn Sink) -> (usize, Result<(), Broken>) {
        let mut delivered = 0;
        for _ in 0..READS_PER_POLL {
            if self.placing.is_some() {
                match self.continue_placing(sink) {
                    Ok((placed, drained)) => {
                        delivered += placed;
                        if drained {
                            break;
                        }
                        continue;
                    }
                    Err(broken) => return (delivered, Err(broken)),
                }
            }
            self.make_room(block);
            let Some(stream) = &mut self.stream else { return (delivered, Err(Broken::Down)) };
            let space = self.received.len() - self.received_end;
            // Behind a placed payload, probably the next chunk: its front only, so that its
            // payload can be placed too.
            let wanted = if self.placed_last { space.min(FRAME_PREFIX + MAX_HEADER) } else { space };
            match stream.read(&mut self.received[self.received_end..self.received_end + wanted]) {
                Ok(0) => {
                    return match self.deliver_complete(sink) {
                        Ok(complete) => (delivered + complete, Err(Broken::Closed { in_frame: self.received_end - self.received_start })),
                        Err(broken) => (delivered, Err(broken)),
                    };
                }
                Ok(count) => {
                    self.received_end += count;
                    self.read_filled = count == space;
                    match self.deliver_complete(sink) {
                        Ok(complete) => delivered += complete,
                        Err(broken) => return (delivered, Err(broken)),
                    }
                    self.start_placing(sink);
                    // Small frames filled a front-sized read and more is waiting: not a run
                    // of chunks, so back to block reads. A read that drained the socket keeps
                    // the mode (a chunk's small neighbours, its acknowledgements, come alone).
                    if self.placed_last && self.placing.is_none() && count == wanted {
                        self.placed_last = false;
                    }
                    if count < wanted {
                        break;
                    }
                }
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) if transient(&error) => break,
                Err(error) => return (delivered, Err(error.into())),
            }
        }
        (delivered, Ok(()))
    }

    /// The frame at the front has its header in and [`PLACE_MIN`] or more payload bytes to
    /// come: if the sink gives a place for its payload, what arrived of it goes there and the
    /// rest will be received there.
    fn start_placing(&mut self, sink: &mut dyn Sink) {
        let Ok(Some((header_len, len))) = self.next_frame_lengths() else { return };
        let buffered = self.received_end - self.received_start;
        let header_start = self.received_start + FRAME_PREFIX;
        let payload_start = header_start + header_len;
        if buffered < FRAME_PREFIX + header_len || len - (self.received_end - payload_start) < PLACE_MIN {
            return;
        }
        let header = &self.received[header_start..payload_start];
        match sink.place(self.peer, header, len) {
            Some(place) if place.len() == len => {
                let arrived = self.received_end - payload_start;
                place[..arrived].copy_from_slice(&self.received[payload_start..self.received_end]);
                self.placed_by_copy += arrived as u64;
                let mut copy = [0u8; MAX_HEADER];
                copy[..header_len].copy_from_slice(header);
                self.placing = Some(Placing { header: copy, header_len, len, filled: arrived, dropping: false });
                self.received_start = 0;
                self.received_end = 0;
            }
            _ => self.placed_last = false,
        }
    }

    /// Receives more of the payload being placed, straight into its place (or, once declined,
    /// drops it). Returns whether it was completed (1 or 0 frames) and whether the socket ran dry.
    fn continue_placing(&mut self, sink: &mut dyn Sink) -> Result<(usize, bool), Broken> {
        let Connection { peer, stream, placing, received, received_end, placed_directly, .. } = self;
        let (Some(stream), Some(state)) = (stream.as_mut(), placing.as_mut()) else { return Err(Broken::Down) };
        let header = &state.header[..state.header_len];
        let wanted = state.len - state.filled;
        let place = if state.dropping { None } else { sink.place(*peer, header, state.len).filter(|place| place.len() == state.len) };
        let read = match place {
            Some(place) => stream.read(&mut place[state.filled..]).inspect(|&count| *placed_directly += count as u64),
            None => {
                state.dropping = true;
                let scratch = received.len() - *received_end;
                stream.read(&mut received[*received_end..*received_end + wanted.min(scratch)])
            }
        };
        let count = match read {
            Ok(0) => return Err(Broken::Closed { in_frame: FRAME_PREFIX + state.header_len + state.filled }),
            Ok(count) => count,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => return Ok((0, false)),
            Err(error) if transient(&error) => return Ok((0, true)),
            Err(error) => return Err(error.into()),
        };
        state.filled += count;
        if state.filled < state.len {
            return Ok((0, count < wanted));
        }
        let placed = if state.dropping {
            0
        } else {
            sink.placed(*peer, header, state.len);
            1
        };
        *placing = None;
        self.placed_last = true;
        Ok((placed, false))
    }

    /// Delivers the complete frames at the front of the receive buffer.
    fn deliver_complete(&mut self, sink: &mut dyn Sink) -> Result<usize, Broken> {
        let mut delivered = 0;
        while let Some((header_len, payload_len)) = self.next_frame_lengths()? {
            let frame_len = FRAME_PREFIX + header_len + payload_len;
            if self.received_end - self.received_start < frame_len {
                break;
            }
            let header_start = self.received_start + FRAME_PREFIX;
            let payload_start = header_start + header_len;
            sink.deliver(Incoming { peer: self.peer, header: &self.received[header_start..payload_start], payload: Payload::Complete(&self.received[payload_start..payload_start + payload_len]) });
            self.received_start += frame_len;
            delivered += 1;
        }
        if self.received_start == self.received_end {
            self.received_start = 0;
            self.received_end = 0;
        }
        Ok(delivered)
    }

    /// Header and payload lengths of the frame at the front, once its prefix has arrived.
    pub(super) fn next_frame_lengths(&self) -> Result<Option<(usize, usize)>, Broken> {
        if self.received_end - self.received_start < FRAME_PREFIX {
            return Ok(None);
        }
        let prefix = &self.received[self.received_start..self.received_start + FRAME_PREFIX];
        let header_len = u32::from_le_bytes(prefix[..4].try_into().expect("4 bytes")) as usize;
        let payload_len = u32::from_le_bytes(prefix[4..].try_into().expect("4 bytes")) as usize;
        if header_len > MAX_HEADER || payload_len > MAX_PAYLOAD {
            return Err(Broken::Malformed { header_len: header_len as u64, payload_len: payload_len as u64 });
        }
        Ok(Some((header_len, payload_len)))
    }

    /// Makes at least [`READ_MIN`] bytes of room after the buffered bytes, when less is left:
    /// moves the undelivered bytes (less than one frame) to the front, doubles a buffer that the
    /// last read filled up to `block` bytes, and grows it to fit a larger frame being received.
    pub(super) fn make_room(&mut self, block: usize) {
        if self.received.len() - self.received_end >= READ_MIN {
            return;
        }
        let needed = match self.next_frame_lengths() {
            Ok(Some((header_len, payload_len))) => FRAME_PREFIX + header_len + payload_len,
            _ => FRAME_PREFIX,
        };
        if self.received_start > 0 {
            self.received.copy_within(self.received_start..self.received_end, 0);
            self.received_end -= self.received_start;
            self.received_start = 0;
        }
        let len = self.received.len();
        let mut target = len.max(RECEIVE_BUFFER_INITIAL);
        if self.read_filled {
            target = target.max((len * 2).min(block));
        }
        if target < needed {
            target = (len * 2).clamp(RECEIVE_BUFFER_INITIAL, MAX_FRAME).max(needed);
        }
        if target > len {
            self.received.resize(target, 0);
        }
    }

    /// Marks the peer down, for the reason `why` (the first one given is kept).
    pub(super) fn close(&mut self, why: &Broken) {
        if self.down_reason.is_none() {
            self.down_reason = Some(why.to_string());
        }
        if let Some(loan) = self.loan.take() {
            if loan.lent.load(Ordering::Acquire) {
                let _ = loan.stream.shutdown(std::net::Shutdown::Both);
            }
        }
        self.stream = None;
        self.pending = Vec::new();
        self.pending_sent = 0;
        self.pending_frames = 0;
        self.waiting_for_room = false;
        self.kernel_queue.set(None);
        self.received = Vec::new();
        self.received_start = 0;
        self.received_end = 0;
        self.read_filled = false;
        self.placing = None;
        self.placed_last = false;
    }
}

/// Starts or stops watching `connection` (number `index` in the poller) for room to write.
pub(super) fn watch_room(poller: &mut Option<Poller>, connection: &mut Connection, index: usize, wait: bool) -> Result<(), Broken> {
    if connection.waiting_for_room == wait {
        return Ok(());
    }
    let (Some(poller), Some(stream)) = (poller.as_mut(), &connection.stream) else { return Err(Broken::Down) };
    poller.watch_output(stream.as_fd(), index as u64, wait).map_err(Broken::from)?;
    connection.waiting_for_room = wait;
    Ok(())
}

/// An error after which the connection is still usable.
pub(super) fn transient(error: &io::Error) -> bool {
    matches!(error.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted)
}

/// A frame as the pieces it is written from: prefix, header, payload slices.
pub(super) struct FramePieces<'h, 'p> {
    prefix: [u8; FRAME_PREFIX],
    header: &'h [u8],
    payload: &'p [IoSlice<'p>],
}

impl<'h, 'p> FramePieces<'h, 'p> {
    /// The frame of `header` and `payload`, and its length on the wire.
    pub(super) fn new(header: &'h [u8], payload: &'p [IoSlice<'p>]) -> Result<(FramePieces<'h, 'p>, usize), TransportError> {
        if header.len() > MAX_HEADER {
            return Err(TransportError::Unsupported("frame header longer than MAX_HEADER"));
        }
        let payload_len: usize = payload.iter().map(|slice| slice.len()).sum();
        if payload_len > MAX_PAYLOAD {
            return Err(TransportError::TooLarge { len: payload_len, max: MAX_PAYLOAD });
        }
        let mut prefix = [0u8; FRAME_PREFIX];
        prefix[..4].copy_from_slice(&(header.len() as u32).to_le_bytes());
        prefix[4..].copy_from_slice(&(payload_len as u32).to_le_bytes());
        Ok((FramePieces { prefix, header, payload }, FRAME_PREFIX + header.len() + payload_len))
    }

    fn count(&self) -> usize {
        2 + self.payload.len()
    }

    fn piece(&self, index: usize) -> &[u8] {
        match index {
            0 => &self.prefix,
            1 => self.header,
            _ => &self.payload[index - 2],
        }
    }

    /// Writes as much of the frame after its first `skip` bytes as the kernel takes now; returns
    /// the bytes written.
    pub(super) fn write_to(&self, stream: &TcpStream, skip: usize) -> io::Result<usize> {
        let mut written = 0;
        let mut next = 0;
        let mut skip = skip;
        while next < self.count() && skip >= self.piece(next).len() {
            skip -= self.piece(next).len();
            next += 1;
        }
        if next == self.count() {
            return Ok(0);
        }
        loop {
            let mut window = [IoSlice::new(&[]); GATHER_MAX];
            let count = (self.count() - next).min(GATHER_MAX);
            let mut window_len = 0;
            for (slot, index) in window.iter_mut().zip(next..next + count) {
                let piece = &self.piece(index)[skip..];
                skip = 0;
                window_len += piece.len();
                *slot = IoSlice::new(piece);
            }
            let sent = match sysnet::send_vectored(stream.as_fd(), &window[..count]) {
                Ok(sent) => sent,
                Err(error) if transient(&error) => 0,
                Err(error) => return Err(error),
            };
            written += sent;
            next += count;
            if sent < window_len || next == self.count() {
                return Ok(written);
            }
        }
    }
}

/// A writer lent to another thread; dropping it gives the peer back to the transport.
pub(super) struct LentWriter {
    pub(super) peer: PeerId,
    pub(super) loan: Arc<Loan>,
}

impl LentWriter {
    /// Shuts the socket down so that the transport, too, sees the peer down.
    fn fail(&self) -> TransportError {
        let _ = self.loan.stream.shutdown(std::net::Shutdown::Both);
        TransportError::Unreachable(self.peer)
    }
}

impl FrameWriter for LentWriter {
    fn write_frame(&mut self, header: &[u8], payload: &[IoSlice<'_>]) -> Result<(), TransportError> {
        let (frame, frame_len) = FramePieces::new(header, payload)?;
        let stream = &self.loan.stream;
        let mut written = 0;
        while written < frame_len {
            written += frame.write_to(stream, written).map_err(|_| self.fail())?;
            // A short write means the socket buffer is full.
            if written < frame_len {
                sysnet::poll_writable(stream.as_fd(), WRITER_WAIT).map_err(|_| self.fail())?;
            }
        }
        Ok(())
    }
}

impl Drop for LentWriter {
    fn drop(&mut self) {
        self.loan.lent.store(false, Ordering::Release);
    }
}

/// The reading side of a connection against whatever a peer writes: valid frames of every size
/// (payloads placed where a sink asks, or delivered whole), then hostile bytes, cut into writes
/// of any length, then the end of the stream. Every valid frame arrives intact and in order;
/// whatever the bytes after them say, nothing longer than the limits is delivered or read, and
/// the stream ends with the peer closed or malformed, never a panic. The case count follows
/// PROPTEST_CASES (each case is a real loopback connection).
#[cfg(test)]
mod hostile {
    use std::io::Write;
    use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

    use proptest::prelude::*;

    use super::super::WIRE_UP_TIMEOUT;
    use super::*;

    /// Frames as a sink saw them; payloads placed in `landing` when `place` is set.
    struct Collect {
        frames: Vec<(Vec<u8>, Vec<u8>)>,
        place: bool,
        landing: Vec<u8>,
    }

    impl Sink for Collect {
        fn deliver(&mut self, incoming: Incoming<'_>) {
            self.frames.push((incoming.header.to_vec(), incoming.payload.whole().to_vec()));
        }

        fn place(&mut self, _: PeerId, _: &[u8], len: usize) -> Option<&mut [u8]> {
            if !self.place {
                return None;
            }
            self.landing.resize(len, 0);
            Some(&mut self.landing[..])
        }

        fn placed(&mut self, _: PeerId, header: &[u8], len: usize) {
            self.frames.push((header.to_vec(), self.landing[..len].to_vec()));
        }
    }

    fn frames() -> impl Strategy<Value = Vec<(Vec<u8>, Vec<u8>)>> {
        let payload = prop_oneof![4 => proptest::collection::vec(any::<u8>(), 0..300), 1 => proptest::collection::vec(any::<u8>(), PLACE_MIN..3 * PLACE_MIN)];
        proptest::collection::vec((proptest::collection::vec(any::<u8>(), 0..=MAX_HEADER), payload), 0..6)
    }

    proptest! {
        #[test]
        fn valid_frames_arrive_and_hostile_bytes_end_the_stream(
            sent in frames(),
            tail in proptest::collection::vec(any::<u8>(), 0..64),
            cuts in proptest::collection::vec(1usize..5000, 1..8),
            place in any::<bool>(),
        ) {
            let mut bytes = Vec::new();
            for (header, payload) in &sent {
                bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
                bytes.extend_from_slice(&(payload.len() as u32).to_le_bytes());
                bytes.extend_from_slice(header);
                bytes.extend_from_slice(payload);
            }
            bytes.extend_from_slice(&tail);
            let listener = sysnet::listen(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), None).unwrap();
            let SocketAddr::V4(address) = listener.local_addr().unwrap() else { panic!("IPv4") };
            let stream = sysnet::connect_from(Ipv4Addr::LOCALHOST, address, None, WIRE_UP_TIMEOUT).unwrap();
            let (mut peer, _) = listener.accept().unwrap();
            let writer = std::thread::spawn(move || {
                let mut rest = &bytes[..];
                for &cut in cuts.iter().cycle() {
                    if rest.is_empty() {
                        break;
                    }
                    let (now, later) = rest.split_at(cut.min(rest.len()));
                    if peer.write_all(now).is_err() {
                        break;
                    }
                    rest = later;
                }
            });
            let mut connection = Connection::new(1, stream);
            let mut sink = Collect { frames: Vec::new(), place, landing: Vec::new() };
            let ended = loop {
                if let (_, Err(broken)) = connection.receive(1 << 20, &mut sink) {
                    break broken;
                }
            };
            writer.join().unwrap();
            prop_assert!(sink.frames.len() >= sent.len(), "{} of {} valid frames arrived, then {ended}", sink.frames.len(), sent.len());
            prop_assert!(sink.frames[..sent.len()] == sent[..], "valid frames arrived changed or out of order");
            for (header, payload) in &sink.frames {
                prop_assert!(header.len() <= MAX_HEADER && payload.len() <= MAX_PAYLOAD);
            }
            prop_assert!(matches!(ended, Broken::Closed { .. } | Broken::Malformed { .. }), "{ended}");
            if tail.is_empty() {
                prop_assert!(matches!(ended, Broken::Closed { in_frame: 0 }), "{ended}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

    use super::super::WIRE_UP_TIMEOUT;
    use super::*;

    #[test]
    fn partial_frames_queue_their_rest_in_order() {
        let (a, b) = (vec![1u8, 2, 3], vec![4u8, 5]);
        let payload = [IoSlice::new(&a), IoSlice::new(&b)];
        let frame = FramePieces { prefix: [9; FRAME_PREFIX], header: &[7, 7], payload: &payload };
        let listener = sysnet::listen(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), None).unwrap();
        let SocketAddr::V4(address) = listener.local_addr().unwrap() else { panic!("IPv4") };
        let stream = sysnet::connect_from(Ipv4Addr::LOCALHOST, address, None, WIRE_UP_TIMEOUT).unwrap();
        let mut connection = Connection::new(0, stream);
        connection.append(&frame, 11);
        assert_eq!(connection.pending, vec![2, 3, 4, 5], "prefix (8), header (2) and one payload byte were written");
        connection.pending_sent = 1;
        connection.append(&frame, 0);
        assert_eq!(connection.pending[..3], [3, 4, 5], "the sent byte is dropped before appending");
        assert_eq!(connection.pending[3..], [[9u8; FRAME_PREFIX].as_slice(), &[7, 7], &a, &b].concat());
        assert_eq!(connection.unsent(), 3 + 15);
        assert_eq!(connection.pending_frames, 2);
    }

    #[test]
    fn receive_buffer_grows_to_the_frame_and_compacts() {
        let listener = sysnet::listen(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), None).unwrap();
        let SocketAddr::V4(address) = listener.local_addr().unwrap() else { panic!("IPv4") };
        let stream = sysnet::connect_from(Ipv4Addr::LOCALHOST, address, None, WIRE_UP_TIMEOUT).unwrap();
        let mut connection = Connection::new(0, stream);
        connection.make_room(RECEIVE_BUFFER_INITIAL);
        assert_eq!(connection.received.len(), RECEIVE_BUFFER_INITIAL);
        let big = 3 * RECEIVE_BUFFER_INITIAL;
        let mut prefix = [0u8; FRAME_PREFIX];
        prefix[4..].copy_from_slice(&(big as u32).to_le_bytes());
        connection.received[100..108].copy_from_slice(&prefix);
        connection.received_start = 100;
        connection.received_end = RECEIVE_BUFFER_INITIAL;
        connection.make_room(RECEIVE_BUFFER_INITIAL);
        assert_eq!((connection.received_start, connection.received_end), (0, RECEIVE_BUFFER_INITIAL - 100));
        assert_eq!(connection.received[..8], prefix);
        assert!(connection.received.len() >= FRAME_PREFIX + big);
        prefix[..4].copy_from_slice(&(MAX_HEADER as u32 + 1).to_le_bytes());
        connection.received[..8].copy_from_slice(&prefix);
        assert!(connection.next_frame_lengths().is_err(), "an oversized header is a broken stream");
    }
}
