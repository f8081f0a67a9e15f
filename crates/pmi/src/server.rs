//! The launcher side of PMI-1: one connection per rank, the job's key-value space, the barrier,
//! and the events (finalize, abort, disconnect) the launcher acts on.
//!
//! The server never blocks: the launcher polls [`PmiServer::descriptors`] together with its other
//! descriptors and calls [`PmiServer::service`] for each readable one (or uses
//! [`PmiServer::poll_once`] when it has nothing else to wait for).

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::wire::{LineBuffer, Message, KEY_MAX, KVSNAME_MAX, VALUE_MAX};

/// Something a rank did that the launcher must know about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// The rank sent `cmd=init`.
    Initialized { rank: u32 },
    /// The rank sent `cmd=finalize` (it is ending normally).
    Finalized { rank: u32 },
    /// The rank asked to end the job (`MPI_Abort`).
    Aborted { rank: u32, code: i32, message: String },
    /// The rank's connection ended; `finalized` tells whether it said goodbye first.
    Closed { rank: u32, finalized: bool },
    /// The rank sent something this server cannot honour; its connection is closed.
    ProtocolError { rank: u32, detail: String },
}

/// How long [`PmiServer::accept_network`] waits for a new connection's `initack` line.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A rank's connection: an inherited socket pair (`PMI_FD`) or TCP (`PMI_PORT` + `PMI_ID`).
enum Stream {
    Local(UnixStream),
    Network(TcpStream),
}

impl Read for Stream {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Local(stream) => stream.read(buffer),
            Stream::Network(stream) => stream.read(buffer),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Local(stream) => stream.write(bytes),
            Stream::Network(stream) => stream.write(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Local(stream) => stream.as_fd(),
            Stream::Network(stream) => stream.as_fd(),
        }
    }
}

struct RankConnection {
    stream: Option<Stream>,
    /// Set once a connection was attached: a rank connects once, a second `initack` is refused.
    attached: bool,
    lines: LineBuffer,
    initialized: bool,
    finalized: bool,
    in_barrier: bool,
}

/// The PMI-1 server of one job.
pub struct PmiServer {
    kvsname: String,
    size: u32,
    universe_size: u32,
    appnum: u32,
    visible: HashMap<String, String>,
    staged: Vec<(String, String)>,
    ranks: Vec<RankConnection>,
    waiting_in_barrier: u32,
}

impl PmiServer {
    /// A server for `size` ranks of job `kvsname` (at most 256 bytes, no spaces).
    pub fn new(kvsname: &str, size: u32) -> PmiServer {
        assert!(!kvsname.is_empty() && kvsname.len() <= KVSNAME_MAX && !kvsname.contains([' ', '=', '\n']), "bad kvsname {kvsname:?}");
        PmiServer {
            kvsname: kvsname.to_string(),
            size,
            universe_size: size,
            appnum: 0,
            visible: HashMap::new(),
            staged: Vec::new(),
            ranks: (0..size).map(|_| RankConnection { stream: None, attached: false, lines: LineBuffer::new(), initialized: false, finalized: false, in_barrier: false }).collect(),
            waiting_in_barrier: 0,
        }
    }

    /// The job's key-value space name (the ranks' `job_id`).
    pub fn kvsname(&self) -> &str {
        &self.kvsname
    }

    /// Hands the server rank `rank`'s end of its PMI socket.
    pub fn attach(&mut self, rank: u32, stream: UnixStream) -> io::Result<()> {
        let slot = self.ranks.get_mut(rank as usize).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("rank {rank} is not in the job")))?;
        stream.set_nonblocking(true)?;
        slot.stream = Some(Stream::Local(stream));
        slot.attached = true;
        Ok(())
    }

    /// Takes a rank's new TCP connection (the rank was given `PMI_PORT` and `PMI_ID`): reads its
    /// `cmd=initack pmiid=N`, waiting at most [`HANDSHAKE_TIMEOUT`], answers with the rank's size,
    /// rank and debug flag, and serves it from then on as rank N. Returns N.
    ///
    /// Blocks for the handshake only; a peer that is not a rank of this job is refused with an error.
    pub fn accept_network(&mut self, mut stream: TcpStream) -> io::Result<u32> {
        let peer = stream.peer_addr().map_or_else(|_| "an unknown address".to_string(), |address| address.to_string());
        let refuse = |detail: String| io::Error::new(io::ErrorKind::InvalidData, format!("PMI connection from {peer}: {detail}"));
        stream.set_nonblocking(false)?;
        let _ = stream.set_nodelay(true);
        let deadline = Instant::now() + HANDSHAKE_TIMEOUT;
        let mut lines = LineBuffer::new();
        let mut buffer = [0u8; 1024];
        let line = loop {
            if let Some(line) = lines.next_line().map_err(|error| refuse(error.to_string()))? {
                break line;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(refuse(format!("no cmd=initack within {} s", HANDSHAKE_TIMEOUT.as_secs())));
            }
            stream.set_read_timeout(Some(left))?;
            match stream.read(&mut buffer) {
                Ok(0) => return Err(refuse("closed before sending cmd=initack".to_string())),
                Ok(read) => lines.extend(&buffer[..read]),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if matches!(error.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) => {
                    return Err(refuse(format!("no cmd=initack within {} s", HANDSHAKE_TIMEOUT.as_secs())));
                }
                Err(error) => return Err(refuse(error.to_string())),
            }
        };
        let message = Message::parse(&line).map_err(|error| refuse(error.to_string()))?;
        if message.command() != "initack" {
            return Err(refuse(format!("expected cmd=initack first, got cmd={}", message.command())));
        }
        let id = message.get("pmiid").ok_or_else(|| refuse("cmd=initack without pmiid".to_string()))?;
        let rank: u32 = id.parse().map_err(|_| refuse(format!("pmiid={id} is not a rank number")))?;
        let Some(slot) = self.ranks.get(rank as usize) else {
            return Err(refuse(format!("pmiid={rank} is not a rank of this job of {} ranks", self.size)));
        };
        if slot.attached {
            return Err(refuse(format!("rank {rank} is already connected")));
        }
        let mut answer = String::new();
        for reply in [Message::new("initack"), Message::new("set").with("size", self.size), Message::new("set").with("rank", rank), Message::new("set").with("debug", 0)] {
            answer.push_str(&reply.to_line().map_err(|error| refuse(error.to_string()))?);
        }
        stream.set_write_timeout(Some(HANDSHAKE_TIMEOUT))?;
        stream.write_all(answer.as_bytes()).map_err(|error| refuse(format!("cannot answer cmd=initack: {error}")))?;
        stream.set_read_timeout(None)?;
        stream.set_write_timeout(None)?;
        stream.set_nonblocking(true)?;
        let slot = &mut self.ranks[rank as usize];
        // The rank waits for the answer before sending more, but keep anything that came early.
        slot.lines.extend(lines.partial());
        slot.stream = Some(Stream::Network(stream));
        slot.attached = true;
        Ok(rank)
    }

    /// Whether `rank` has sent `cmd=init`.
    pub fn initialized(&self, rank: u32) -> bool {
        self.ranks.get(rank as usize).is_some_and(|slot| slot.initialized)
    }

    /// Whether `rank` has sent `cmd=finalize`.
    pub fn finalized(&self, rank: u32) -> bool {
        self.ranks.get(rank as usize).is_some_and(|slot| slot.finalized)
    }

    /// The open connections, to poll for reading: `(rank, descriptor)`.
    pub fn descriptors(&self) -> Vec<(u32, BorrowedFd<'_>)> {
        self.ranks.iter().enumerate().filter_map(|(rank, slot)| slot.stream.as_ref().map(|stream| (rank as u32, stream.as_fd()))).collect()
    }

    /// Reads whatever `rank` has sent and answers it. Call when its descriptor is readable, and
    /// once more when the rank exits (to catch a last `abort`).
    pub fn service(&mut self, rank: u32) -> Vec<ServerEvent> {
        let mut events = Vec::new();
        let Some(slot) = self.ranks.get_mut(rank as usize) else { return events };
        let Some(stream) = slot.stream.as_mut() else { return events };
        let mut buffer = [0u8; 4096];
        let mut closed = false;
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => {
                    closed = true;
                    break;
                }
                Ok(read) => slot.lines.extend(&buffer[..read]),
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) if error.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => {
                    closed = true;
                    break;
                }
            }
        }
        loop {
            let line = match self.ranks[rank as usize].lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(error) => {
                    self.drop_connection(rank, error.to_string(), &mut events);
                    return events;
                }
            };
            if let Err(detail) = self.handle_line(rank, &line, &mut events) {
                self.drop_connection(rank, detail, &mut events);
                return events;
            }
            if self.ranks[rank as usize].stream.is_none() {
                return events;
            }
        }
        if closed {
            let slot = &mut self.ranks[rank as usize];
            slot.stream = None;
            events.push(ServerEvent::Closed { rank, finalized: slot.finalized });
        }
        events
    }

    /// Waits up to `timeout` for any rank to send something, and services the ones that did.
    pub fn poll_once(&mut self, timeout: Option<Duration>) -> io::Result<Vec<ServerEvent>> {
        let (ranks, ready) = {
            let descriptors = self.descriptors();
            if descriptors.is_empty() {
                return Ok(Vec::new());
            }
            let fds: Vec<BorrowedFd<'_>> = descriptors.iter().map(|(_, fd)| *fd).collect();
            let ready = braid_sys::fd::poll_readable(&fds, timeout)?;
            (descriptors.iter().map(|(rank, _)| *rank).collect::<Vec<u32>>(), ready)
        };
        let mut events = Vec::new();
        for (rank, readiness) in ranks.into_iter().zip(ready) {
            if readiness.any() {
                events.extend(self.service(rank));
            }
        }
        Ok(events)
    }

    fn drop_connection(&mut self, rank: u32, detail: String, events: &mut Vec<ServerEvent>) {
        let slot = &mut self.ranks[rank as usize];
        slot.stream = None;
        events.push(ServerEvent::ProtocolError { rank, detail });
        events.push(ServerEvent::Closed { rank, finalized: slot.finalized });
    }

    fn reply(&mut self, rank: u32, message: &Message) -> Result<(), String> {
        let line = message.to_line().map_err(|error| error.to_string())?;
        let Some(stream) = self.ranks[rank as usize].stream.as_mut() else { return Ok(()) };
        // Ranks wait for each reply before sending more, so one short line always fits the socket buffer.
        stream.write_all(line.as_bytes()).map_err(|error| format!("cannot answer rank {rank}: {error}"))
    }

    fn handle_line(&mut self, rank: u32, line: &str, events: &mut Vec<ServerEvent>) -> Result<(), String> {
        let message = Message::parse(line).map_err(|error| error.to_string())?;
        match message.command() {
            "init" => {
                self.ranks[rank as usize].initialized = true;
                events.push(ServerEvent::Initialized { rank });
                let version_ok = message.get("pmi_version") == Some("1");
                let reply = Message::new("response_to_init").with("pmi_version", 1).with("pmi_subversion", 1).with("rc", if version_ok { 0 } else { -1 });
                self.reply(rank, &reply)
            }
            "get_maxes" => {
                let reply = Message::new("maxes").with("kvsname_max", KVSNAME_MAX).with("keylen_max", KEY_MAX).with("vallen_max", VALUE_MAX).with("rc", 0);
                self.reply(rank, &reply)
            }
            "get_appnum" => {
                let reply = Message::new("appnum").with("appnum", self.appnum).with("rc", 0);
                self.reply(rank, &reply)
            }
            "get_my_kvsname" => {
                let reply = Message::new("my_kvsname").with("kvsname", &self.kvsname).with("rc", 0);
                self.reply(rank, &reply)
            }
            "get_universe_size" => {
                let reply = Message::new("universe_size").with("size", self.universe_size).with("rc", 0);
                self.reply(rank, &reply)
            }
            "put" => {
                let reply = match self.check_put(&message) {
                    Ok((key, value)) => {
                        self.staged.push((key, value));
                        Message::new("put_result").with("rc", 0).with("msg", "success")
                    }
                    Err(reason) => Message::new("put_result").with("rc", -1).with("msg", reason),
                };
                self.reply(rank, &reply)
            }
            "get" => {
                let reply = match self.check_get(&message) {
                    Ok(value) => Message::new("get_result").with("rc", 0).with("msg", "success").with("value", value),
                    Err(reason) => Message::new("get_result").with("rc", -1).with("msg", reason).with("value", "unknown"),
                };
                self.reply(rank, &reply)
            }
            "barrier_in" => {
                let slot = &mut self.ranks[rank as usize];
                if slot.in_barrier {
                    return Err(format!("rank {rank} entered the barrier twice"));
                }
                slot.in_barrier = true;
                self.waiting_in_barrier += 1;
                if self.waiting_in_barrier == self.size {
                    self.complete_barrier();
                }
                Ok(())
            }
            "finalize" => {
                self.ranks[rank as usize].finalized = true;
                events.push(ServerEvent::Finalized { rank });
                self.reply(rank, &Message::new("finalize_ack").with("rc", 0))
            }
            "abort" => {
                let code = message.get("exitcode").and_then(|text| text.parse().ok()).unwrap_or(1);
                let text = message.get("error_msg").unwrap_or("").to_string();
                events.push(ServerEvent::Aborted { rank, code, message: text });
                Ok(())
            }
            other => Err(format!("rank {rank} sent the PMI command {other:?}, which braid run does not support")),
        }
    }

    fn check_put(&self, message: &Message) -> Result<(String, String), String> {
        self.check_kvsname(message)?;
        let key = message.get("key").filter(|key| !key.is_empty()).ok_or("missing_key")?;
        let value = message.get("value").ok_or("missing_value")?;
        if key.len() > KEY_MAX || value.len() > VALUE_MAX {
            return Err("key_or_value_too_long".to_string());
        }
        Ok((key.to_string(), value.to_string()))
    }

    fn check_get(&self, message: &Message) -> Result<String, String> {
        self.check_kvsname(message)?;
        let key = message.get("key").ok_or("missing_key")?;
        self.visible.get(key).cloned().ok_or_else(|| format!("key_{key}_not_found"))
    }

    fn check_kvsname(&self, message: &Message) -> Result<(), String> {
        match message.get("kvsname") {
            Some(name) if name != self.kvsname => Err(format!("unknown_kvsname_{name}")),
            _ => Ok(()),
        }
    }

    /// Publishes the puts made since the last barrier (a later put of a key wins) and releases all.
    fn complete_barrier(&mut self) {
        self.visible.extend(self.staged.drain(..));
        self.waiting_in_barrier = 0;
        let reply = Message::new("barrier_out").with("rc", 0);
        for rank in 0..self.size {
            self.ranks[rank as usize].in_barrier = false;
            // A rank that cannot be answered will fail on its own; the others still proceed.
            let _ = self.reply(rank, &reply);
        }
    }
}
