//! The transport interface: the small contract every channel (self, shared memory, and next the
//! network rails) implements, and the implementations.
//!
//! A transport moves *frames*: an opaque header (the engine's, at most [`MAX_HEADER`] bytes) and a
//! payload gathered from an iovec. Frames from one sender to one receiver arrive in the order they
//! were sent. A transport knows nothing of MPI: matching and protocols live in the engine.

pub mod conformance;
pub mod disconnected;
pub mod profile_cache;
pub mod renumbered;
pub mod selfloop;
pub mod shm;
pub mod tcp;

use std::fmt;
use std::io::IoSlice;
use std::os::fd::BorrowedFd;
use std::sync::Arc;
use std::time::Duration;

use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::Bootstrap;
pub use braid_sys::net::PathTiming;

/// A doorbell a thread sleeps on outside the transport that owns it (see
/// [`Transport::shared_doorbell`]).
pub trait SharedDoorbell: Send + Sync {
    /// Sleeps until the doorbell rings or `timeout` passes; returns at once if it rang since
    /// the `prepare_sleep` that gave `token`.
    fn sleep(&self, token: u32, timeout: Duration);

    /// The futex doorbell behind this one, for a thread that sleeps on several at once
    /// ([`braid_sys::futex::Doorbell::sleep_any`]); `None` where it is something else.
    fn futex(&self) -> Option<&braid_sys::futex::Doorbell> {
        None
    }
}

/// Largest engine header a transport must carry.
pub const MAX_HEADER: usize = 64;

/// Result of posting a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendOutcome {
    /// The frame was copied out; the caller's buffers may be reused.
    Sent,
    /// No room now (ring full, no pool buffer): retry after polling.
    WouldBlock,
}

/// A frame handed to the engine by `poll`. The slices are valid only during the callback.
#[derive(Debug)]
pub struct Incoming<'a> {
    pub peer: PeerId,
    pub header: &'a [u8],
    pub payload: Payload<'a>,
}

/// Where `poll` hands what arrived ([`Transport::poll_placing`]): whole frames, and, for a
/// transport that can receive a payload straight into its destination, the place a frame's
/// payload belongs once its header is in.
pub trait Sink {
    /// A whole frame (as the callback of [`Transport::poll`] gets it).
    fn deliver(&mut self, incoming: Incoming<'_>);

    /// The header of a frame from `peer` whose payload of `len` bytes is still arriving: where
    /// those bytes go, or `None` to have the frame delivered whole as usual. Asked again, with
    /// the same header, by every later `poll` that receives more of the payload, so the answer
    /// may change (an unneeded payload is then dropped; it must not change for one still
    /// needed); the slice is written only during the call that returned it.
    fn place(&mut self, peer: PeerId, header: &[u8], len: usize) -> Option<&mut [u8]> {
        let _ = (peer, header, len);
        None
    }

    /// Every byte of the `len`-byte payload of the frame with `header` from `peer` is in the
    /// place the last [`Sink::place`] gave.
    fn placed(&mut self, peer: PeerId, header: &[u8], len: usize) {
        let _ = (peer, header, len);
    }
}

/// A [`Sink`] that places nothing: every frame is delivered whole to the callback.
pub struct Deliver<F>(pub F);

impl<F: FnMut(Incoming<'_>)> Sink for Deliver<F> {
    fn deliver(&mut self, incoming: Incoming<'_>) {
        (self.0)(incoming)
    }
}

/// A payload still being written by its sender: its bytes become readable from the front.
pub trait Filling {
    /// Length of the whole payload.
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The written front of the payload, at least `at_least` bytes (at most `len`): waits for the
    /// sender while fewer are written.
    fn written(&self, at_least: usize) -> &[u8];
}

/// A frame's payload: complete, or handed over while the sender still writes it (the shared-memory
/// transport does so for large pooled payloads, so that the receiver's copy out runs alongside the
/// sender's copy in). Read it with [`Payload::copy_front_to`], [`Payload::append_to`] or
/// [`Payload::whole`].
#[derive(Clone, Copy)]
pub enum Payload<'a> {
    Complete(&'a [u8]),
    Filling(&'a dyn Filling),
}

impl<'a> Payload<'a> {
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Payload::Complete(bytes) => bytes.len(),
            Payload::Filling(filling) => filling.len(),
        }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The whole payload (waits until it is all written).
    pub fn whole(&self) -> &'a [u8] {
        match *self {
            Payload::Complete(bytes) => bytes,
            Payload::Filling(filling) => filling.written(filling.len()),
        }
    }

    /// Copies the first `dest.len()` bytes (at most `len`) into `dest`, each part as soon as it is
    /// written.
    #[inline]
    pub fn copy_front_to(&self, dest: &mut [u8]) {
        match *self {
            Payload::Complete(bytes) => dest.copy_from_slice(&bytes[..dest.len()]),
            Payload::Filling(filling) => copy_while_filling(filling, dest),
        }
    }

    /// Appends the whole payload to `out`, each part as soon as it is written.
    pub fn append_to(&self, out: &mut Vec<u8>) {
        match *self {
            Payload::Complete(bytes) => out.extend_from_slice(bytes),
            Payload::Filling(filling) => {
                let start = out.len();
                out.resize(start + filling.len(), 0);
                copy_while_filling(filling, &mut out[start..]);
            }
        }
    }
}

/// Off the small-message path: only large shared-memory payloads arrive while being written.
#[inline(never)]
fn copy_while_filling(filling: &dyn Filling, dest: &mut [u8]) {
    let mut done = 0;
    while done < dest.len() {
        let written = filling.written(done + 1);
        let end = written.len().min(dest.len());
        dest[done..end].copy_from_slice(&written[done..end]);
        done = end;
    }
}

impl fmt::Debug for Payload<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Payload::Complete(bytes) => write!(f, "Complete({} bytes)", bytes.len()),
            Payload::Filling(filling) => write!(f, "Filling({} bytes)", filling.len()),
        }
    }
}

/// Where a buffer lives, for a peer to read or write it directly (CMA).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteRegion {
    pub pid: i32,
    pub address: u64,
    pub len: u64,
}

impl RemoteRegion {
    /// `buf`, in this process.
    pub fn of_own(buf: &[u8]) -> RemoteRegion {
        RemoteRegion { pid: std::process::id() as i32, address: buf.as_ptr() as u64, len: buf.len() as u64 }
    }
}

/// A transport failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TransportError {
    /// The operation is not offered by this transport (see [`Capabilities`]).
    Unsupported(&'static str),
    /// The kernel refused a remote read or write (EPERM): use the two-copy path for this peer.
    RemoteAccessRefused,
    /// This transport has no connection to that peer.
    Unreachable(PeerId),
    /// Payload larger than `max_payload`.
    TooLarge { len: usize, max: usize },
    /// Wire-up through the bootstrap failed.
    Bootstrap(String),
    /// Any other system error, with its context.
    System(String),
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Unsupported(what) => write!(f, "not supported by this transport: {what}"),
            TransportError::RemoteAccessRefused => write!(f, "remote memory access refused by the kernel (EPERM)"),
            TransportError::Unreachable(peer) => write!(f, "no channel to rank {peer}"),
            TransportError::TooLarge { len, max } => write!(f, "frame payload of {len} bytes exceeds {max}"),
            TransportError::Bootstrap(reason) => write!(f, "wire-up failed: {reason}"),
            TransportError::System(reason) => write!(f, "{reason}"),
        }
    }
}

impl std::error::Error for TransportError {}

/// Writes whole frames to one peer from another thread (chunk-submission offload). While a
/// writer is lent, the transport's own `try_send` to that peer answers `WouldBlock`, so frames
/// never interleave; dropping the writer gives the peer back.
pub trait FrameWriter: Send {
    /// Writes one frame (header, then the concatenated payload) completely, waiting for room in
    /// the socket as needed. `Err(Unreachable)` when the connection fails; a frame `try_send`
    /// would refuse (header or payload too long) is refused the same way.
    fn write_frame(&mut self, header: &[u8], payload: &[IoSlice<'_>]) -> Result<(), TransportError>;
}

/// The interface every transport implements.
pub trait Transport {
    /// Short name for messages and profiles ("self", "shm", "tcp:eth1").
    fn name(&self) -> &str;

    /// What this transport offers.
    fn capabilities(&self) -> Capabilities;

    /// Measured (or, until measured, estimated) cost of a transfer per size.
    fn profile(&self) -> &Profile;

    /// Wire-up: publish this rank's address through the bootstrap and attach to the peers this
    /// transport serves. Collective over the job (every rank calls it, in the same order).
    fn connect(&mut self, bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError>;

    /// Whether this transport carries frames to `peer` (after `connect`).
    fn reaches(&self, peer: PeerId) -> bool;

    /// Posts one frame: `header` then the concatenation of `payload`. Frames to one peer are
    /// delivered in posting order. Never blocks.
    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError>;

    /// Delivers arrived frames to `deliver`, in order per peer; returns how many were delivered.
    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize;

    /// Like `poll`, and a payload that `sink` can place (see [`Sink::place`]) is received
    /// straight into its place instead of this transport's buffer (TCP does so: one copy fewer
    /// for each rendezvous chunk). Frames delivered and placed count alike in the result.
    fn poll_placing(&mut self, sink: &mut dyn Sink) -> usize {
        self.poll(&mut |incoming| sink.deliver(incoming))
    }

    /// Lends a writer for `peer` to another thread, if this transport can (TCP can when nothing
    /// is queued for that peer; shared memory and self cannot). `None`: submit from this thread.
    fn lend_writer(&mut self, peer: PeerId) -> Option<Box<dyn FrameWriter>> {
        let _ = peer;
        None
    }

    /// Describes `buf` so that `peer` can read it with `remote_read`.
    fn expose(&self, buf: &[u8]) -> RemoteRegion {
        RemoteRegion::of_own(buf)
    }

    /// Copies `local.len()` bytes starting `offset` bytes into `remote` (exposed by `peer`).
    fn remote_read(&mut self, peer: PeerId, remote: RemoteRegion, offset: u64, local: &mut [u8]) -> Result<(), TransportError> {
        let _ = (peer, remote, offset, local);
        Err(TransportError::Unsupported("remote read"))
    }

    /// Copies `local` to `offset` bytes into `remote` (exposed by `peer`). Offered with
    /// `remote_read` (the same kernel facility); the answer to a refusal is the same fallback.
    fn remote_write(&mut self, peer: PeerId, remote: RemoteRegion, offset: u64, local: &[u8]) -> Result<(), TransportError> {
        let _ = (peer, remote, offset, local);
        Err(TransportError::Unsupported("remote write"))
    }

    /// Receiver side of a shared copy with `peer` (see `remote_write`): offers the sender part of
    /// the copy and returns the offer's token, or `None` when this transport cannot share. At
    /// most one offer per peer is open at a time; a new one replaces a settled one.
    fn offer_share(&mut self, peer: PeerId) -> Option<u64> {
        let _ = peer;
        None
    }

    /// Sender side: takes offer `token` from `peer`, committing this rank to copy its part
    /// now; false if the receiver has revoked it (it copies everything itself).
    fn claim_share(&mut self, peer: PeerId, token: u64) -> bool {
        let _ = (peer, token);
        false
    }

    /// Receiver side: withdraws offer `token` to `peer` before it is claimed; false if the sender
    /// claimed it first (its part is then on the way).
    fn revoke_share(&mut self, peer: PeerId, token: u64) -> bool {
        let _ = (peer, token);
        true
    }

    /// Prepares to sleep: after this returns `Some(token)`, any frame sent to this rank rings the
    /// doorbell. The caller polls once more, then calls `sleep(token)` if nothing arrived.
    /// `None`: this transport cannot wake a sleeper (the caller must keep polling).
    fn prepare_sleep(&mut self) -> Option<u32> {
        None
    }

    /// Sleeps until the doorbell rings or `timeout` passes; `token` comes from `prepare_sleep`.
    fn sleep(&mut self, token: u32, timeout: std::time::Duration) {
        let _ = (token, timeout);
    }

    /// Ends a sleep phase started by `prepare_sleep` (senders stop ringing).
    fn finish_sleep(&mut self) {}

    /// This rank's doorbell as a handle of its own, for a thread that sleeps on it (with a token
    /// from `prepare_sleep`) while other threads of the process use the transport. `None` where
    /// the transport has no such doorbell.
    fn shared_doorbell(&self) -> Option<Arc<dyn SharedDoorbell>> {
        None
    }

    /// Rings this rank's own doorbell, as a peer's frame would: a thread of this process has
    /// changed what another thread of it, asleep on the doorbell, waits for.
    fn ring_own_doorbell(&self) {}

    /// Rings `peer`'s doorbell, as a frame sent to it would: this rank has changed memory the
    /// peer shares and may sleep waiting on (a flag of a collective). A no-op where the
    /// transport has no doorbell for `peer`.
    fn ring_peer(&self, peer: PeerId) {
        let _ = peer;
    }

    /// Whether `peer` sleeps on this transport's doorbell now (blocked in a wait with nothing to
    /// do, so its CPU is idle); false where this transport cannot tell.
    fn peer_asleep(&self, peer: PeerId) -> bool {
        let _ = peer;
        false
    }

    /// A descriptor that is readable while `poll` has something to do (input, or room for a
    /// connection waiting for it), with no arming needed: the engine sleeps on several such
    /// transports at once (the network rails) by waiting on all their descriptors. `None`: no
    /// such descriptor (the shared-memory doorbell is a futex).
    fn doorbell(&self) -> Option<BorrowedFd<'_>> {
        None
    }

    /// Whether a frame to `peer` would be handed to the kernel now: false while the connection
    /// waits for room after a short write (frames then only queue behind its pending bytes). Its
    /// backlog then only shrinks, and the engine neither reads it nor posts more chunks to it
    /// until the doorbell reports room.
    fn has_room(&self, peer: PeerId) -> bool {
        let _ = peer;
        true
    }

    /// Bytes posted to `peer` that have not left this host yet (kernel send queue plus the
    /// transport's own queue): the strategy turns it into "time until this rail is idle".
    fn backlog(&self, peer: PeerId) -> u64 {
        let _ = peer;
        0
    }

    /// What the path to `peer` measures of its round trips now (smoothed, and the least seen
    /// lately), where the transport keeps such figures (TCP does); `None` otherwise. A read costs
    /// a system call: callers ask rarely.
    fn path_timing(&self, peer: PeerId) -> Option<PathTiming> {
        let _ = peer;
        None
    }

    /// A peer whose process has ended (killed, or exited without finalizing), with what is
    /// known of it, where this transport can tell (the shared-memory one watches the processes
    /// of its node); `None` otherwise. Costs a system call: the engine asks while it waits.
    fn ended_peer(&self) -> Option<(PeerId, String)> {
        None
    }

    /// Why this transport stopped reaching `peer` (it closed the connection, sent a frame that
    /// could not be trusted, the link failed), where it knows; `None` while it reaches it.
    #[cold]
    fn down_reason(&self, peer: PeerId) -> Option<String> {
        let _ = peer;
        None
    }
}
