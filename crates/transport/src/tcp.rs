//! The TCP transport: one instance per network rail (a local interface), one connection per
//! peer on that rail (`connection.rs`: framing, reads, writes, lent writers; `handshake.rs`: the
//! wire-up's published addresses and hellos; `rail_selection.rs`: which interfaces are rails).
//!
//! ## Wire-up (collective, in `connect`)
//! Each rank listens on the rail's address (port 0), publishes `tcp-<rail>-<rank>` =
//! `ip:port/<node identity>` and fences once. Then, for every rank that published on the same rail
//! name and that this transport serves (ranks on other nodes; every other rank when shared memory
//! is off), the lower rank connects from a socket bound to the rail's address (so the traffic
//! leaves on that interface) and sends a hello (magic, its rank, a hash of the job id and rail
//! name); the higher rank accepts and identifies it by the hello. Connects complete in the kernel's
//! accept backlog, so every rank connects first and accepts afterwards without waiting on anyone:
//! no deadlock, and no second fence.
//!
//! ## Frames
//! `[u32 header_len][u32 payload_len][header][payload]`, little endian, written with one vectored
//! `sendmsg`. When the kernel takes only part of a frame, the rest is copied into the peer's
//! pending buffer and the frame counts as sent. While a peer has pending bytes, new frames are
//! appended behind them (up to [`PENDING_FRAMES_MAX`] frames and [`PENDING_BYTES_MAX`] bytes,
//! then `WouldBlock`): small eager frames sent while the rail is busy leave in one write.
//!
//! ## Cost per byte
//! - **Writes wait for room.** After a short write the socket is full, and each further attempt
//!   would take the few packets' worth that the latest acknowledgements freed (a 3-rail stream
//!   at MTU 1500 made about 11 KiB per `sendmsg` and three `SIOCOUTQ` reads per write). So after
//!   a short write nothing is written to that peer until epoll reports room, which the kernel
//!   does once about a third of the send buffer is free; the connection's output is watched only
//!   meanwhile. The frames posted in between queue behind the pending bytes as before.
//! - **One send-queue read per progress step.** `backlog` reads `SIOCOUTQ` once per connection
//!   between two `poll`s and adds the bytes written since: the engine asks several times a step.
//! - **Reads in large blocks.** `poll` asks epoll which connections have input or room (one
//!   system call when nothing happened) and reads into a per-peer receive buffer, delivering
//!   every complete frame of a read. A buffer that a read filled grows (doubling) up to
//!   `BRAID_RAIL_RECEIVE_BLOCK`, and the bytes of a frame cut by the buffer's end move to its
//!   front only when little room is left: once per buffer's worth instead of once per frame (a
//!   128 KiB buffer receiving 64 KiB frames had moved nearly every byte once more).
//!
//! - **Payloads placed where they belong.** With [`Transport::poll_placing`], once a frame's
//!   header is in and at least [`PLACE_MIN`] bytes of its payload are still to come, the sink is
//!   asked where the payload goes (the engine answers for a rendezvous chunk: its spot in the
//!   user's buffer). The part already read is copied there and the rest is received straight
//!   into it, over as many polls as it takes (the sink is asked again each time, and may decline
//!   a payload it no longer needs, which is then dropped). After a placed payload the next read
//!   takes only a frame's prefix and largest header, so that the next chunk's payload is placed
//!   too; a large frame not placed, or small frames filling such a read with more waiting,
//!   return the connection to block reads.
//!
//! ## Sleeping
//! The epoll set is the doorbell: it is level-triggered, so nothing needs arming, and a rank
//! sleeps on it (or on several rails' sets at once, through [`Transport::doorbell`]) until a
//! connection has input or a connection waiting for room has some.
//!
//! ## Lent writers (chunk-submission offload)
//! `lend_writer` gives another thread a [`FrameWriter`] on a duplicate of a peer's socket
//! (duplicated once per connection and cached) when nothing is pending for that peer. Until the
//! writer is dropped, `try_send` to that peer answers `WouldBlock`, so the writer's frames (same
//! wire format, same code) never interleave with the transport's. A writer whose write fails shuts
//! the socket down, so the transport's next read or write fails and marks the peer down; a peer
//! marked down while lent has its socket shut down, so the writer fails too.
//!
//! ## Closing
//! Dropping the transport waits for lent writers to come back, hands the bytes still pending to
//! the kernel (blocking, at most [`CLOSE_LINGER`] in all) and shuts the connections down for
//! writing, so frames reported `Sent` reach a peer that keeps polling.
//!
//! ## Failure
//! A link that goes down sends no reset; TCP_USER_TIMEOUT (`BRAID_RAIL_TIMEOUT_MS`) turns bytes left
//! unacknowledged that long into a connection error.
//! End of file, a connection error or a malformed frame marks the peer down on this rail: the
//! frames that arrived whole are still delivered, then `reaches(peer)` is false and `try_send`
//! answers `Unreachable(peer)`.

mod connection;
mod handshake;
mod rail_selection;

use std::io::{self, IoSlice, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_config::Config;
use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::Bootstrap;
use braid_sys::net::{self as sysnet, Poller};
use braid_sys::{fd, process};

use crate::{profile_cache, Deliver, FrameWriter, Incoming, PathTiming, SendOutcome, Sink, Transport, TransportError};

use connection::{transient, watch_room, Broken, Connection, FramePieces, LentWriter, Loan};
use handshake::{hello, hello_hash, parse_hello, parse_published, HELLO_LEN};
pub use rail_selection::{rails, Rail, MANAGEMENT_INTERFACE};

/// Largest payload of one frame (one chunk of a split message).
pub const MAX_PAYLOAD: usize = 4 << 20;
/// Payloads up to this size are "small" (reported as `max_inline`; TCP carries every frame inline).
pub const MAX_INLINE: usize = 1024;
/// While a peer has unsent bytes, at most this many frames are queued behind them.
pub const PENDING_FRAMES_MAX: usize = 64;
/// ... and at most this many bytes in all; more is `WouldBlock`.
pub const PENDING_BYTES_MAX: usize = 256 << 10;
/// How long wire-up waits for a connection or a hello.
pub const WIRE_UP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long an accepted connection may take to send its hello before it is dropped.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// How long dropping the transport may block to get lent writers back and hand queued bytes to
/// the kernel.
pub const CLOSE_LINGER: Duration = Duration::from_secs(10);
/// How often dropping the transport looks whether its lent writers have come back.
const LOAN_RETURN_CHECK: Duration = Duration::from_millis(1);

/// Estimate used until the rail is sampled: a gigabit link with a typical kernel TCP latency.
const MODEL_LATENCY_NANOS: f64 = 30_000.0;
const MODEL_BYTES_PER_SECOND: f64 = 1.25e8;

/// A payload with fewer bytes than this still to come is read into the receive buffer and
/// copied as usual: placing it would cost a system call more than the copy it saves.
pub const PLACE_MIN: usize = 8 << 10;
/// Ready connections reported by one epoll wait; the rest are reported by the next one.
const EPOLL_BATCH: usize = 64;
const NO_CONNECTION: u32 = u32::MAX;

/// The TCP transport of one rail.
pub struct TcpTransport {
    rail: Rail,
    name: String,
    identity: String,
    profile_file: PathBuf,
    profile: Profile,
    measured: bool,
    /// Same-node peers are served by shared memory, so only ranks on other nodes are connected.
    shm: bool,
    socket_buffer: Option<usize>,
    /// Unacknowledged bytes older than this fail the connection (a rail that went down silently).
    user_timeout: Duration,
    /// Idle time before a connection is probed; `None`: never.
    keepalive: Option<Duration>,
    /// The connections' TCP congestion control; `None`: the system's default.
    congestion: Option<String>,
    connected: bool,
    /// For each job rank: its index in `connections`, or NO_CONNECTION.
    route: Vec<u32>,
    connections: Vec<Connection>,
    poller: Option<Poller>,
    /// Calls of `poll` so far: a send-queue length read during the same count is still current.
    polls: u64,
    /// Most bytes one connection's receive buffer grows to for reading (`BRAID_RAIL_RECEIVE_BLOCK`).
    receive_block: usize,
}

impl TcpTransport {
    /// The transport of `rail`; nothing is opened until [`Transport::connect`]. The rail's
    /// profile is loaded from `config.profile_dir` when a valid one is cached for its identity,
    /// otherwise it is a model guess until [`TcpTransport::set_profile`].
    pub fn new(config: &Config, rail: Rail) -> Result<TcpTransport, TransportError> {
        if rail.name.is_empty() {
            return Err(TransportError::System("a rail needs an interface name".to_string()));
        }
        let identity = rail_identity(&rail);
        let profile_file = profile_cache::identity_file(Path::new(&config.profile_dir), &identity);
        let cached = profile_cache::load(&profile_file).ok();
        Ok(TcpTransport {
            name: format!("tcp:{}", rail.name),
            rail,
            identity,
            profile_file,
            measured: cached.is_some(),
            profile: cached.unwrap_or_else(|| Profile::from_model(MODEL_LATENCY_NANOS, MODEL_BYTES_PER_SECOND, MAX_PAYLOAD)),
            shm: config.shm,
            socket_buffer: None,
            user_timeout: Duration::from_millis(config.rail_timeout_ms as u64),
            keepalive: (config.rail_keepalive_s > 0).then(|| Duration::from_secs(config.rail_keepalive_s.into())),
            congestion: config.rail_congestion.clone(),
            connected: false,
            route: Vec::new(),
            connections: Vec::new(),
            poller: None,
            polls: 0,
            receive_block: config.rail_receive_block,
        })
    }

    pub fn rail(&self) -> &Rail {
        &self.rail
    }

    /// What names this rail's network for profile caching: interface, local address, subnet, MTU.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Where this rail's profile is cached (`profile_cache::save` there after sampling).
    pub fn profile_file(&self) -> &Path {
        &self.profile_file
    }

    /// Whether the profile was measured (loaded from the cache or set), not a model guess.
    pub fn profile_is_measured(&self) -> bool {
        self.measured
    }

    /// Replaces the profile (after sampling).
    pub fn set_profile(&mut self, profile: Profile) {
        self.profile = profile;
        self.measured = true;
    }

    /// Sets the kernel socket buffers of every connection (before `connect`; for experiments and
    /// tests: small buffers make partial writes and back-pressure happen early).
    pub fn set_socket_buffer(&mut self, bytes: usize) {
        self.socket_buffer = Some(bytes);
    }

    /// Bytes of placed payloads (see [`Transport::poll_placing`]) received straight into their
    /// place, and bytes copied there from the receive buffer, over every connection.
    pub fn placed_bytes(&self) -> (u64, u64) {
        self.connections.iter().fold((0, 0), |(direct, copied), connection| (direct + connection.placed_directly, copied + connection.placed_by_copy))
    }

    /// How many times the kernel send queue (`SIOCOUTQ`) was read, over every connection.
    pub fn send_queue_reads(&self) -> u64 {
        self.connections.iter().map(|connection| connection.queue_reads.get()).sum()
    }

    fn connection_of(&self, peer: PeerId) -> Option<usize> {
        match self.route.get(peer as usize) {
            Some(&index) if index != NO_CONNECTION && self.connections[index as usize].stream.is_some() => Some(index as usize),
            _ => None,
        }
    }

    fn mark_down(&mut self, index: usize, why: &Broken) {
        self.connections[index].close(why);
    }

    /// Starts (`true`) or stops waiting for epoll to report room in connection `index`'s socket.
    fn wait_for_room(&mut self, index: usize, wait: bool) -> Result<(), Broken> {
        let TcpTransport { poller, connections, .. } = self;
        watch_room(poller, &mut connections[index], index, wait)
    }

    fn key(&self, rank: u32) -> String {
        let rail: String = self.rail.name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') { c } else { '_' }).collect();
        format!("tcp-{rail}-{rank}")
    }

    fn wire_up_error(&self, what: String) -> TransportError {
        TransportError::System(format!("rail {} ({}): {what}", self.rail.name, self.rail.address))
    }

    /// Connects to the higher ranks, then accepts the lower ones (see the module comment).
    fn attach(&self, bootstrap: &mut dyn Bootstrap, listener: TcpListener, node: &str) -> Result<Vec<(PeerId, TcpStream)>, TransportError> {
        let (rank, size) = (bootstrap.rank(), bootstrap.size());
        let hash = hello_hash(bootstrap.job_id(), &self.rail.name);
        let mut lower = Vec::new();
        let mut streams = Vec::new();
        for peer in (0..size).filter(|&peer| peer != rank) {
            let Ok(value) = bootstrap.get(&self.key(peer)) else { continue };
            let (address, peer_node) = parse_published(&value).ok_or_else(|| self.wire_up_error(format!("rank {peer} published an unreadable address {value:?}")))?;
            if self.shm && peer_node == node {
                continue;
            }
            if peer < rank {
                lower.push(peer);
                continue;
            }
            let stream = sysnet::connect_from(self.rail.address, address, self.socket_buffer, WIRE_UP_TIMEOUT)
                .and_then(|mut stream| {
                    stream.write_all(&hello(rank, hash))?;
                    Ok(stream)
                })
                .map_err(|error| self.wire_up_error(format!("rank {rank} cannot connect to rank {peer} at {address}: {error}")))?;
            streams.push((peer, stream));
        }
        let accepted = self.accept_lower(&listener, rank, hash, &lower)?;
        streams.extend(accepted);
        Ok(streams)
    }

    fn accept_lower(&self, listener: &TcpListener, rank: u32, hash: u64, lower: &[PeerId]) -> Result<Vec<(PeerId, TcpStream)>, TransportError> {
        let deadline = Instant::now() + WIRE_UP_TIMEOUT;
        let mut missing: Vec<PeerId> = lower.to_vec();
        let mut streams = Vec::new();
        listener.set_nonblocking(true).map_err(|error| self.wire_up_error(format!("listener: {error}")))?;
        while !missing.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.wire_up_error(format!("rank(s) {missing:?} did not connect to rank {rank} within {WIRE_UP_TIMEOUT:?}")));
            }
            let mut stream = match listener.accept() {
                Ok((stream, _)) => stream,
                Err(error) if transient(&error) => {
                    fd::poll_readable(&[listener.as_fd()], Some(left)).map_err(|error| self.wire_up_error(format!("waiting for connections: {error}")))?;
                    continue;
                }
                Err(error) => return Err(self.wire_up_error(format!("accept: {error}"))),
            };
            // A connection that is not a well-formed hello from an expected rank is dropped.
            let mut greeting = [0u8; HELLO_LEN];
            let greeted = stream.set_nonblocking(false).and_then(|()| stream.set_read_timeout(Some(left.min(HELLO_TIMEOUT)))).and_then(|()| stream.read_exact(&mut greeting));
            if greeted.is_err() {
                continue;
            }
            let Some(peer) = parse_hello(&greeting, hash) else { continue };
            if let Some(position) = missing.iter().position(|&m| m == peer) {
                missing.swap_remove(position);
                streams.push((peer, stream));
            }
        }
        Ok(streams)
    }

    /// Makes the wired-up streams the transport's connections.
    fn install(&mut self, size: u32, streams: Vec<(PeerId, TcpStream)>) -> Result<(), TransportError> {
        let mut poller = Poller::new(EPOLL_BATCH).map_err(|error| self.wire_up_error(format!("epoll: {error}")))?;
        self.route = vec![NO_CONNECTION; size as usize];
        for (index, (peer, stream)) in streams.into_iter().enumerate() {
            if let Some(name) = &self.congestion {
                sysnet::set_congestion_control(stream.as_fd(), name).map_err(|error| self.wire_up_error(congestion_refused(name, &error)))?;
            }
            let prepared = stream
                .set_nodelay(true)
                .and_then(|()| sysnet::set_user_timeout(stream.as_fd(), self.user_timeout))
                .and_then(|()| self.keepalive.map_or(Ok(()), |idle| sysnet::set_keepalive(stream.as_fd(), idle)))
                .and_then(|()| stream.set_read_timeout(None))
                .and_then(|()| stream.set_nonblocking(true))
                .and_then(|()| poller.add(stream.as_fd(), index as u64));
            prepared.map_err(|error| self.wire_up_error(format!("setting up the connection to rank {peer}: {error}")))?;
            self.route[peer as usize] = index as u32;
            self.connections.push(Connection::new(peer, stream));
        }
        self.poller = Some(poller);
        Ok(())
    }
}

/// Why BRAID_RAIL_CONGESTION=`name` could not be used, with what the kernel offers.
#[cold]
fn congestion_refused(name: &str, error: &std::io::Error) -> String {
    let listed = |sysctl: &str| std::fs::read_to_string(format!("/proc/sys/net/ipv4/tcp_{sysctl}_congestion_control")).map_or_else(|_| "unknown".to_string(), |text| text.trim().to_string());
    let (offered, allowed) = (listed("available"), listed("allowed"));
    format!("BRAID_RAIL_CONGESTION={name}: the kernel refused it ({error}); it offers {offered}, and allows {allowed} without CAP_NET_ADMIN")
}

impl Drop for TcpTransport {
    fn drop(&mut self) {
        let deadline = Instant::now() + CLOSE_LINGER;
        for connection in &self.connections {
            while connection.is_lent() && Instant::now() < deadline {
                std::thread::sleep(LOAN_RETURN_CHECK);
            }
        }
        for connection in &mut self.connections {
            let Some(stream) = connection.stream.take() else { continue };
            let unsent = &connection.pending[connection.pending_sent..];
            if !unsent.is_empty() {
                let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
                let _ = stream.set_nonblocking(false).and_then(|()| stream.set_write_timeout(Some(left))).and_then(|()| (&stream).write_all(unsent));
            }
            let _ = stream.shutdown(std::net::Shutdown::Write);
        }
    }
}

/// Network namespace (when it has an `ip netns` name), interface, address, subnet and MTU of
/// `rail`, as far as the system knows them. The namespace keeps virtual clusters built side by
/// side, whose rails have the same addresses, from sharing cached profiles.
fn rail_identity(rail: &Rail) -> String {
    let subnet = sysnet::interfaces().ok().and_then(|all| all.into_iter().find(|i| i.name == rail.name && i.address == rail.address)).map(|interface| {
        let mask = u32::MAX.checked_shl(32 - u32::from(interface.prefix_len)).unwrap_or(0);
        format!("{}_{}", Ipv4Addr::from(u32::from(interface.address) & mask), interface.prefix_len)
    });
    let mut identity = match braid_sys::netns::current_name() {
        Ok(Some(namespace)) => format!("netns-{namespace}-{}-{}", rail.name, rail.address),
        _ => format!("{}-{}", rail.name, rail.address),
    };
    if let Some(subnet) = subnet {
        identity.push_str(&format!("-net{subnet}"));
    }
    if let Ok(mtu) = sysnet::mtu(&rail.name) {
        identity.push_str(&format!("-mtu{mtu}"));
    }
    identity
}

impl Transport for TcpTransport {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities { max_payload: MAX_PAYLOAD, max_inline: MAX_INLINE, remote_read: false, wakes_receiver: true }
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn connect(&mut self, bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        if self.connected {
            return Err(TransportError::Unsupported("connecting a tcp transport twice"));
        }
        let (rank, size) = (bootstrap.rank(), bootstrap.size());
        // A rank that cannot identify its node or listen publishes nothing (peers then skip it)
        // but still fences, so no rank waits for it.
        let node = process::node_identity().map_err(|error| self.wire_up_error(format!("cannot identify this node: {error}")));
        let listening = sysnet::listen(SocketAddrV4::new(self.rail.address, 0), self.socket_buffer)
            .and_then(|listener| match listener.local_addr()? {
                SocketAddr::V4(address) => Ok((listener, address)),
                SocketAddr::V6(_) => Err(io::Error::new(io::ErrorKind::InvalidData, "IPv6 listener on an IPv4 rail")),
            })
            .map_err(|error| self.wire_up_error(format!("cannot listen: {error}")));
        if let (Ok(node), Ok((_, address))) = (&node, &listening) {
            bootstrap.put(&self.key(rank), &format!("{address}/{node}")).map_err(|error| TransportError::Bootstrap(error.to_string()))?;
        }
        bootstrap.fence().map_err(|error| TransportError::Bootstrap(error.to_string()))?;
        let (node, (listener, _)) = (node?, listening?);
        let streams = self.attach(bootstrap, listener, &node)?;
        self.install(size, streams)?;
        self.connected = true;
        Ok(())
    }

    fn reaches(&self, peer: PeerId) -> bool {
        self.connection_of(peer).is_some()
    }

    #[cold]
    fn down_reason(&self, peer: PeerId) -> Option<String> {
        let index = *self.route.get(peer as usize)?;
        if index == NO_CONNECTION {
            return None;
        }
        self.connections[index as usize].down_reason.clone()
    }

    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        let Some(index) = self.connection_of(peer) else { return Err(TransportError::Unreachable(peer)) };
        let (frame, frame_len) = FramePieces::new(header, payload)?;

        let connection = &mut self.connections[index];
        if connection.is_lent() {
            return Ok(SendOutcome::WouldBlock);
        }
        // Pending bytes are always waiting for room: no write until epoll reports it.
        if connection.waiting_for_room {
            if connection.unsent() > 0 && connection.has_room(frame_len) {
                connection.append(&frame, 0);
                return Ok(SendOutcome::Sent);
            }
            return Ok(SendOutcome::WouldBlock);
        }
        let Some(stream) = &connection.stream else { return Err(TransportError::Unreachable(peer)) };
        let outcome = match frame.write_to(stream, 0) {
            Ok(written) if written == frame_len => {
                connection.handed_over += written as u64;
                return Ok(SendOutcome::Sent);
            }
            Ok(0) if frame_len > PENDING_BYTES_MAX => SendOutcome::WouldBlock,
            Ok(written) => {
                connection.handed_over += written as u64;
                connection.append(&frame, written);
                SendOutcome::Sent
            }
            Err(error) => {
                self.mark_down(index, &error.into());
                return Err(TransportError::Unreachable(peer));
            }
        };
        if let Err(broken) = self.wait_for_room(index, true) {
            self.mark_down(index, &broken);
            return Err(TransportError::Unreachable(peer));
        }
        Ok(outcome)
    }

    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        self.poll_placing(&mut Deliver(deliver))
    }

    fn poll_placing(&mut self, sink: &mut dyn Sink) -> usize {
        self.polls += 1;
        let TcpTransport { poller, connections, receive_block, .. } = self;
        let ready = match poller.as_mut().map(|poller| poller.wait(Duration::ZERO)) {
            Some(Ok(ready)) => ready.len(),
            _ => return 0,
        };
        let mut delivered = 0;
        for slot in 0..ready {
            let Some(ready) = poller.as_ref().map(|poller| poller.last()[slot]) else { break };
            let index = ready.token as usize;
            let connection = &mut connections[index];
            // Input first: frames that arrived whole are delivered even if the write then fails.
            let mut state = Ok(());
            if ready.readable() {
                let (count, received) = connection.receive(*receive_block, sink);
                delivered += count;
                state = received;
            }
            if state.is_ok() && ready.writable() && connection.waiting_for_room {
                state = match connection.flush() {
                    Ok(true) => watch_room(poller, connection, index, false),
                    Ok(false) => Ok(()),
                    Err(broken) => Err(broken),
                };
            }
            if let Err(broken) = state {
                connection.close(&broken);
            }
        }
        delivered
    }

    fn lend_writer(&mut self, peer: PeerId) -> Option<Box<dyn FrameWriter>> {
        let index = self.connection_of(peer)?;
        let connection = &mut self.connections[index];
        if connection.unsent() > 0 {
            return None;
        }
        if connection.loan.is_none() {
            let stream = connection.stream.as_ref()?.try_clone().ok()?;
            connection.loan = Some(Arc::new(Loan { stream, lent: AtomicBool::new(false) }));
        }
        let loan = connection.loan.as_ref()?;
        if loan.lent.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(Box::new(LentWriter { peer, loan: Arc::clone(loan) }))
    }

    fn backlog(&self, peer: PeerId) -> u64 {
        let Some(index) = self.connection_of(peer) else { return 0 };
        self.connections[index].backlog(self.polls)
    }

    fn has_room(&self, peer: PeerId) -> bool {
        self.connection_of(peer).is_none_or(|index| !self.connections[index].waiting_for_room)
    }

    fn path_timing(&self, peer: PeerId) -> Option<PathTiming> {
        let stream = self.connections[self.connection_of(peer)?].stream.as_ref()?;
        sysnet::path_timing(stream.as_fd()).ok().flatten()
    }

    fn prepare_sleep(&mut self) -> Option<u32> {
        self.poller.as_ref().map(|_| 0)
    }

    fn sleep(&mut self, _token: u32, timeout: Duration) {
        if let Some(poller) = &self.poller {
            let _ = poller.sleep(timeout);
        }
    }

    fn doorbell(&self) -> Option<BorrowedFd<'_>> {
        self.poller.as_ref().map(|poller| poller.as_fd())
    }
}

#[cfg(test)]
mod tests {
    use super::connection::{FRAME_PREFIX, READ_MIN, RECEIVE_BUFFER_INITIAL};
    use super::*;
    use crate::conformance::{pattern, Suite};
    use crate::MAX_HEADER;
    use std::sync::mpsc;

    /// Rails between ranks of one process: no shared memory, profiles in a directory of `label`'s own.
    fn loopback_config(label: &str) -> Config {
        let profile_dir = std::env::temp_dir().join(format!("braid-tcp-unit-{label}-{}", std::process::id()));
        Config { shm: false, profile_dir: profile_dir.display().to_string(), ..Config::default() }
    }

    fn loopback_transport(config: &Config) -> TcpTransport {
        TcpTransport::new(config, Rail { name: "lo".to_string(), address: Ipv4Addr::LOCALHOST }).unwrap()
    }

    /// Two loopback ranks without shared memory, with model profiles.
    fn loopback_suite(label: &str, socket_buffer: Option<usize>) -> Suite<impl Fn(u32, u32) -> TcpTransport + Send + Sync + 'static> {
        let config = loopback_config(label);
        Suite::new(label, 2, move |_, _| {
            let mut transport = loopback_transport(&config);
            if let Some(bytes) = socket_buffer {
                transport.set_socket_buffer(bytes);
            }
            transport
        })
    }

    fn congestion_config(label: &str, name: &str) -> Config {
        Config { rail_congestion: Some(name.to_string()), ..loopback_config(label) }
    }

    /// Reno is built into every kernel and allowed to everyone.
    #[test]
    fn rail_connections_use_the_congestion_control_asked_for() {
        let config = congestion_config("congestion", "reno");
        Suite::new("congestion", 2, move |_, _| loopback_transport(&config)).run_job("congestion", |me| {
            let stream = me.transport.connections[0].stream.as_ref().expect("a connected stream");
            assert_eq!(sysnet::congestion_control(stream.as_fd()).unwrap(), "reno");
        });
    }

    #[test]
    fn a_congestion_control_the_kernel_lacks_fails_the_wire_up_with_what_it_offers() {
        let config = congestion_config("no-congestion", "nosuchcontrol");
        let id = format!("no-congestion-{}", std::process::id());
        let ranks: Vec<_> = braid_pmi::threads::ThreadBootstrap::job(&id, 2)
            .into_iter()
            .map(|mut bootstrap| {
                let config = config.clone();
                std::thread::spawn(move || loopback_transport(&config).connect(&mut bootstrap).map(|_| ()))
            })
            .collect();
        for rank in ranks {
            let message = rank.join().unwrap().expect_err("an unknown congestion control is refused").to_string();
            assert!(message.contains("BRAID_RAIL_CONGESTION=nosuchcontrol") && message.contains("it offers") && message.contains("reno"), "{message}");
        }
    }

    /// Rank 0 lends a writer to a thread that writes four 1 MiB frames while rank 1 polls; during
    /// the loan `try_send` to rank 1 would block (and a second loan is refused); afterwards it
    /// sends again, and rank 1 gets every frame intact and in order.
    #[test]
    fn a_lent_writer_sends_whole_frames_and_blocks_try_send_until_dropped() {
        const FRAMES: u32 = 4;
        const LEN: usize = 1 << 20;
        loopback_suite("lend", Some(64 << 10)).run_job("lend", |me| {
            if me.rank == 1 {
                me.receive_until(|inbox| inbox.len() == FRAMES as usize + 1);
                for (seq, frame) in me.inbox[..FRAMES as usize].iter().enumerate() {
                    assert_eq!(frame.header, (seq as u32).to_le_bytes(), "frame {seq} out of order");
                    assert!(frame.payload == pattern(0, seq as u32, LEN), "frame {seq} corrupted");
                }
                assert_eq!(me.inbox[FRAMES as usize].header, b"after");
                me.send(0, b"ok", &[]);
                return;
            }
            let mut writer = me.transport.lend_writer(1).expect("an idle connection lends a writer");
            assert!(me.transport.lend_writer(1).is_none(), "one writer at a time");
            let (written, written_seen) = mpsc::channel();
            let (release, released) = mpsc::channel::<()>();
            let thread = std::thread::spawn(move || {
                for seq in 0..FRAMES {
                    let payload = pattern(0, seq, LEN);
                    let (first, second) = payload.split_at(LEN / 3);
                    writer.write_frame(&seq.to_le_bytes(), &[IoSlice::new(first), IoSlice::new(second)]).unwrap();
                }
                written.send(()).unwrap();
                released.recv().unwrap();
            });
            loop {
                let all_written = written_seen.try_recv().is_ok();
                assert_eq!(me.transport.try_send(1, b"during", &[]), Ok(SendOutcome::WouldBlock));
                if all_written {
                    break;
                }
                me.poll();
                me.check_alive();
            }
            release.send(()).unwrap();
            thread.join().unwrap();
            me.send(1, b"after", &[]);
            me.receive_until(|inbox| inbox.iter().any(|f| f.header == b"ok"));
        });
    }

    /// No loan while bytes are pending for the peer; a writer whose peer went away fails with
    /// `Unreachable`, and the transport then sees the peer down.
    #[test]
    fn lending_waits_for_the_queue_and_a_failed_writer_takes_the_peer_down() {
        const LEN: usize = 1 << 20;
        loopback_suite("lend-fail", Some(4096)).run_job("lend-fail", |me| {
            if me.rank == 1 {
                me.receive_until(|inbox| !inbox.is_empty());
                return;
            }
            me.send(1, b"big", &[IoSlice::new(&pattern(0, 0, LEN))]);
            assert!(me.transport.lend_writer(1).is_none(), "a 1 MiB frame cannot have left through 4 KiB buffers at once");
            let mut writer = loop {
                if let Some(writer) = me.transport.lend_writer(1) {
                    break writer;
                }
                me.poll();
                me.check_alive();
            };
            let payload = pattern(0, 1, LEN);
            let mut frames = 0;
            let error = loop {
                match writer.write_frame(b"more", &[IoSlice::new(&payload)]) {
                    Ok(()) => frames += 1,
                    Err(error) => break error,
                }
                assert!(frames < 1000, "writes to a closed peer keep succeeding");
                me.check_alive();
            };
            assert_eq!(error, TransportError::Unreachable(1));
            drop(writer);
            while me.transport.reaches(1) {
                me.poll();
                me.check_alive();
            }
            assert_eq!(me.transport.try_send(1, b"late", &[]), Err(TransportError::Unreachable(1)));
            assert!(me.transport.lend_writer(1).is_none());
        });
    }

    /// Once a write comes back short, nothing more is written to that peer until epoll reports
    /// room: frames posted meanwhile queue behind the pending bytes (the queue grows by exactly
    /// their length) or are refused when it is full. Polling then hands everything over, and
    /// the peer receives every frame in order.
    #[test]
    fn after_a_short_write_frames_queue_until_the_socket_has_room() {
        const LEN: usize = 128 << 10;
        const SMALL: u32 = 8;
        loopback_suite("room", Some(16 << 10)).run_job("room", |me| {
            if me.rank == 1 {
                me.receive_until(|inbox| inbox.len() == 2 + SMALL as usize);
                assert!(me.inbox[0].payload == pattern(0, 0, LEN), "the large frame is intact");
                for seq in 1..=SMALL {
                    assert_eq!(me.inbox[seq as usize].header, seq.to_le_bytes(), "frame {seq} out of order");
                }
                assert!(me.inbox[1 + SMALL as usize].payload == pattern(0, 9, PENDING_BYTES_MAX + 1));
                me.send(0, b"ok", &[]);
                return;
            }
            me.send(1, b"big", &[IoSlice::new(&pattern(0, 0, LEN))]);
            let index = me.transport.connection_of(1).unwrap();
            assert!(me.transport.connections[index].waiting_for_room, "128 KiB cannot fit 16 KiB socket buffers");
            assert!(!me.transport.has_room(1), "a socket waiting for room says so");
            for seq in 1..=SMALL {
                let before = me.transport.connections[index].unsent();
                assert_eq!(me.transport.try_send(1, &seq.to_le_bytes(), &[]), Ok(SendOutcome::Sent));
                assert_eq!(me.transport.connections[index].unsent(), before + FRAME_PREFIX + 4, "frame {seq} was queued, not written");
            }
            let large = pattern(0, 9, PENDING_BYTES_MAX + 1);
            assert_eq!(me.transport.try_send(1, b"", &[IoSlice::new(&large)]), Ok(SendOutcome::WouldBlock), "the queue is full");
            while me.transport.connections[index].waiting_for_room {
                me.poll();
                me.check_alive();
            }
            assert!(me.transport.has_room(1));
            me.send(1, b"", &[IoSlice::new(&large)]);
            me.receive_until(|inbox| inbox.iter().any(|f| f.header == b"ok"));
        });
    }

    /// Payloads the sink places are received straight into their place: after the first, only a
    /// frame's front passes through the receive buffer. The payloads are intact, and the small
    /// frames between them are delivered whole, in order.
    #[test]
    fn placed_payloads_are_received_straight_into_their_place() {
        const FRAMES: usize = 24;
        const LEN: usize = 256 << 10;
        struct Places {
            places: Vec<Vec<u8>>,
            placed: Vec<usize>,
            small: Vec<Vec<u8>>,
        }
        impl Sink for Places {
            fn deliver(&mut self, incoming: Incoming<'_>) {
                assert_eq!(incoming.header[0], b's', "a placeable frame was delivered whole");
                self.small.push(incoming.header.to_vec());
            }
            fn place(&mut self, _peer: PeerId, header: &[u8], len: usize) -> Option<&mut [u8]> {
                (header[0] == b'P' && len == LEN).then(|| self.places[header[1] as usize].as_mut_slice())
            }
            fn placed(&mut self, _peer: PeerId, header: &[u8], _len: usize) {
                self.placed.push(header[1] as usize);
            }
        }
        loopback_suite("place", Some(64 << 10)).run_job("place", |me| {
            if me.rank == 0 {
                for seq in 0..FRAMES as u8 {
                    me.send(1, &[b'P', seq], &[IoSlice::new(&pattern(0, u32::from(seq), LEN))]);
                    me.send(1, &[b's', seq], &[]);
                }
                me.receive_until(|inbox| !inbox.is_empty());
                return;
            }
            let mut sink = Places { places: vec![vec![0; LEN]; FRAMES], placed: Vec::new(), small: Vec::new() };
            while sink.small.len() < FRAMES {
                me.transport.poll_placing(&mut sink);
                me.check_alive();
            }
            assert_eq!(sink.placed, (0..FRAMES).collect::<Vec<_>>());
            assert_eq!(sink.small, (0..FRAMES as u8).map(|seq| vec![b's', seq]).collect::<Vec<_>>());
            for (seq, place) in sink.places.iter().enumerate() {
                assert!(*place == pattern(0, seq as u32, LEN), "payload {seq} corrupted");
            }
            let (direct, copied) = me.transport.placed_bytes();
            assert_eq!(direct + copied, (FRAMES * LEN) as u64);
            // The first payload may have been read in a block; after it, a frame's front at most.
            assert!(copied <= (LEN + FRAMES * (FRAME_PREFIX + MAX_HEADER)) as u64, "{copied} bytes copied");
            me.send(0, b"done", &[]);
        });
    }

    /// The send queue is read once per poll; frames written in between are added to it.
    #[test]
    fn backlog_counts_what_was_written_since_the_queue_was_read() {
        loopback_suite("backlog", None).run_job("backlog", |me| {
            if me.rank == 0 {
                let first = me.transport.backlog(1);
                let payload = vec![7u8; 1000];
                assert_eq!(me.transport.try_send(1, b"h", &[IoSlice::new(&payload)]), Ok(SendOutcome::Sent));
                assert_eq!(me.transport.backlog(1), first + (FRAME_PREFIX + 1 + 1000) as u64, "until the next poll the written bytes are added");
                let index = me.transport.connection_of(1).unwrap();
                let (read_at, _, _) = me.transport.connections[index].kernel_queue.get().unwrap();
                me.poll();
                me.transport.backlog(1);
                assert_eq!(me.transport.connections[index].kernel_queue.get().unwrap().0, read_at + 1, "a poll makes the next backlog read the queue again");
            }
            me.barrier_polling();
            if me.rank == 1 {
                me.receive_until(|inbox| !inbox.is_empty());
            }
        });
    }

    /// A connection whose reads fill its buffer grows it to the receive block; the undelivered
    /// bytes move to the front only when less than READ_MIN of room is left.
    #[test]
    fn a_streaming_connection_reads_in_large_blocks_and_moves_little() {
        let listener = sysnet::listen(SocketAddrV4::new(Ipv4Addr::LOCALHOST, 0), None).unwrap();
        let SocketAddr::V4(address) = listener.local_addr().unwrap() else { panic!("IPv4") };
        let stream = sysnet::connect_from(Ipv4Addr::LOCALHOST, address, None, WIRE_UP_TIMEOUT).unwrap();
        let mut connection = Connection::new(0, stream);
        let block = 1 << 20;
        connection.make_room(block);
        assert_eq!(connection.received.len(), RECEIVE_BUFFER_INITIAL, "a new connection starts small");
        connection.received_end = RECEIVE_BUFFER_INITIAL;
        connection.read_filled = true;
        for expected in [2 * RECEIVE_BUFFER_INITIAL, 4 * RECEIVE_BUFFER_INITIAL, 8 * RECEIVE_BUFFER_INITIAL, 16 * RECEIVE_BUFFER_INITIAL, block] {
            connection.make_room(block);
            assert_eq!(connection.received.len(), expected);
            connection.received_end = connection.received.len();
        }
        connection.make_room(block);
        assert_eq!(connection.received.len(), block, "never beyond the block for frames that fit it");
        // Half a frame left at the end of a full block: it moves to the front.
        connection.received_start = block - 100;
        connection.make_room(block);
        assert_eq!((connection.received_start, connection.received_end), (0, 100));
        // With READ_MIN or more of room nothing moves.
        connection.received_start = 50;
        connection.received_end = block - READ_MIN;
        connection.make_room(block);
        assert_eq!((connection.received_start, connection.received_end), (50, block - READ_MIN));
        // A connection whose reads do not fill the buffer keeps its size.
        let mut quiet = Connection::new(0, sysnet::connect_from(Ipv4Addr::LOCALHOST, address, None, WIRE_UP_TIMEOUT).unwrap());
        quiet.make_room(block);
        quiet.received_start = 10;
        quiet.received_end = RECEIVE_BUFFER_INITIAL;
        quiet.make_room(block);
        assert_eq!((quiet.received.len(), quiet.received_start, quiet.received_end), (RECEIVE_BUFFER_INITIAL, 0, RECEIVE_BUFFER_INITIAL - 10));
    }
}
