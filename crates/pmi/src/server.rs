//! The launcher side of PMI-1: one connection per process, the key-value space and barrier of
//! each job (the one launched, and those its processes spawn), and the events (finalize, abort,
//! disconnect, spawn) the launcher acts on.
//!
//! Processes are numbered across jobs: the launched job's ranks first, then each spawned job's
//! in turn ([`PmiServer::add_job`]); events name processes by that number.
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

use crate::spawn::{block_line, parse_block, SpawnBlock, SpawnRequest};
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
    /// The rank asks for a new job (MPI_Comm_spawn): the launcher starts it
    /// ([`PmiServer::add_job`]) and answers ([`PmiServer::answer_spawn`]).
    Spawn { rank: u32, request: SpawnRequest },
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
    /// The job (index into `PmiServer::jobs`).
    job: usize,
    /// Which command of its job started it.
    appnum: u32,
    /// The lines of a spawn block being received (after `mcmd=spawn`).
    spawn_lines: Option<Vec<(String, String)>>,
    /// The spawn blocks received so far, until the last one.
    spawn_blocks: Vec<SpawnBlock>,
}

impl RankConnection {
    fn new(job: usize, appnum: u32) -> RankConnection {
        RankConnection { stream: None, attached: false, lines: LineBuffer::new(), initialized: false, finalized: false, in_barrier: false, job, appnum, spawn_lines: None, spawn_blocks: Vec::new() }
    }
}

/// One job's key-value space and barrier.
struct Job {
    kvsname: String,
    /// Its first process.
    first: u32,
    size: u32,
    visible: HashMap<String, String>,
    staged: Vec<(String, String)>,
    waiting_in_barrier: u32,
}

/// The PMI-1 server of a launched job and of the jobs it spawns.
pub struct PmiServer {
    jobs: Vec<Job>,
    universe_size: u32,
    ranks: Vec<RankConnection>,
    /// The name service (MPI_Publish_name) of every job served: service -> port.
    names: HashMap<String, String>,
}

fn check_kvsname(kvsname: &str) {
    assert!(!kvsname.is_empty() && kvsname.len() <= KVSNAME_MAX && !kvsname.contains([' ', '=', '\n']), "bad kvsname {kvsname:?}");
}

impl PmiServer {
    /// A server for `size` ranks of job `kvsname` (at most 256 bytes, no spaces).
    pub fn new(kvsname: &str, size: u32) -> PmiServer {
        check_kvsname(kvsname);
        let job = Job { kvsname: kvsname.to_string(), first: 0, size, visible: HashMap::new(), staged: Vec::new(), waiting_in_barrier: 0 };
        PmiServer { jobs: vec![job], universe_size: size, ranks: (0..size).map(|_| RankConnection::new(0, 0)).collect(), names: HashMap::new() }
    }

    /// The launched job's key-value space name (its ranks' `job_id`).
    pub fn kvsname(&self) -> &str {
        &self.jobs[0].kvsname
    }

    /// What `get_universe_size` answers: how many processes the jobs may grow to.
    pub fn set_universe_size(&mut self, size: u32) {
        self.universe_size = size;
    }

    /// Adds the job that `request` asks for, named `kvsname`, with the request's values already
    /// in its key-value space; returns its first process (the others follow, command by command,
    /// each with its command's index as its `appnum`).
    pub fn add_job(&mut self, kvsname: &str, request: &SpawnRequest) -> u32 {
        check_kvsname(kvsname);
        let first = self.ranks.len() as u32;
        let job = self.jobs.len();
        self.jobs.push(Job { kvsname: kvsname.to_string(), first, size: request.processes(), visible: request.preput.iter().cloned().collect(), staged: Vec::new(), waiting_in_barrier: 0 });
        for (appnum, command) in request.commands.iter().enumerate() {
            self.ranks.extend((0..command.nprocs).map(|_| RankConnection::new(job, appnum as u32)));
        }
        first
    }

    /// Process `process`'s job name and rank in that job.
    pub fn job_of(&self, process: u32) -> Option<(&str, u32)> {
        let slot = self.ranks.get(process as usize)?;
        let job = &self.jobs[slot.job];
        Some((&job.kvsname, process - job.first))
    }

    /// Answers the spawn that process `process` asked for: done, or why not.
    pub fn answer_spawn(&mut self, process: u32, outcome: Result<(), String>) {
        let reply = match outcome {
            Ok(()) => Message::new("spawn_result").with("rc", 0),
            Err(reason) => Message::new("spawn_result").with("rc", -1).with("msg", reason.replace(['\n', '\r'], " ")),
        };
        // A process that cannot be answered fails on its own.
        let _ = self.reply(process, &reply);
    }

    /// Hands the server rank `rank`'s end of its PMI socket.
    pub fn attach(&mut self, rank: u32, stream: UnixStream) -> io::Result<()> {
        let slot = self.ranks.get_mut(rank as usize).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, format!("rank {rank} is not in the job")))?;
        stream.set_nonblocking(true)?;
        slot.stream = Some(Stream::Local(stream));
        slot.attached = true;
        Ok(())
    }

    /// Takes a process's new TCP connection (it was given `PMI_PORT` and `PMI_ID`, its process
    /// number: a rank of the launched job or a process of a job it spawned): reads its
    /// `cmd=initack pmiid=N`, waiting at most [`HANDSHAKE_TIMEOUT`], answers with its job's size,
    /// its rank there and the debug flag, and serves it from then on as process N. Returns N.
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
        // The process number: a rank of the launched job, or a process of a job it spawned.
        let rank: u32 = id.parse().map_err(|_| refuse(format!("pmiid={id} is not a rank number")))?;
        let Some(slot) = self.ranks.get(rank as usize) else {
            return Err(refuse(format!("pmiid={rank} is not a rank of this job of {} ranks nor of a job it spawned", self.jobs[0].size)));
        };
        if slot.attached {
            return Err(refuse(format!("rank {rank} is already connected")));
        }
        let job = &self.jobs[slot.job];
        let mut answer = String::new();
        for reply in [Message::new("initack"), Message::new("set").with("size", job.size), Message::new("set").with("rank", rank - job.first), Message::new("set").with("debug", 0)] {
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
            let handled = match self.ranks[rank as usize].spawn_lines.is_some() || line.starts_with("mcmd=") {
                true => self.handle_spawn_line(rank, &line, &mut events),
                false => self.handle_line(rank, &line, &mut events),
            };
            if let Err(detail) = handled {
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
                let reply = Message::new("appnum").with("appnum", self.ranks[rank as usize].appnum).with("rc", 0);
                self.reply(rank, &reply)
            }
            "get_my_kvsname" => {
                let reply = Message::new("my_kvsname").with("kvsname", &self.jobs[self.ranks[rank as usize].job].kvsname).with("rc", 0);
                self.reply(rank, &reply)
            }
            "get_universe_size" => {
                let reply = Message::new("universe_size").with("size", self.universe_size).with("rc", 0);
                self.reply(rank, &reply)
            }
            "put" => {
                let job = self.ranks[rank as usize].job;
                let reply = match self.check_put(job, &message) {
                    Ok((key, value)) => {
                        self.jobs[job].staged.push((key, value));
                        Message::new("put_result").with("rc", 0).with("msg", "success")
                    }
                    Err(reason) => Message::new("put_result").with("rc", -1).with("msg", reason),
                };
                self.reply(rank, &reply)
            }
            "get" => {
                let reply = match self.check_get(self.ranks[rank as usize].job, &message) {
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
                let job = slot.job;
                self.jobs[job].waiting_in_barrier += 1;
                if self.jobs[job].waiting_in_barrier == self.jobs[job].size {
                    self.complete_barrier(job);
                }
                Ok(())
            }
            "finalize" => {
                self.ranks[rank as usize].finalized = true;
                events.push(ServerEvent::Finalized { rank });
                self.reply(rank, &Message::new("finalize_ack").with("rc", 0))
            }
            "publish_name" => {
                let reply = match (message.get("service"), message.get("port")) {
                    (Some(service), Some(port)) if !self.names.contains_key(service) => {
                        self.names.insert(service.to_string(), port.to_string());
                        Message::new("publish_result").with("rc", 0).with("msg", "success")
                    }
                    (Some(service), Some(_)) => Message::new("publish_result").with("rc", -1).with("msg", format!("service_{service}_is_already_published")),
                    _ => Message::new("publish_result").with("rc", -1).with("msg", "missing_service_or_port"),
                };
                self.reply(rank, &reply)
            }
            "unpublish_name" => {
                let reply = match message.get("service").and_then(|service| self.names.remove(service)) {
                    Some(_) => Message::new("unpublish_result").with("rc", 0).with("msg", "success"),
                    None => Message::new("unpublish_result").with("rc", -1).with("msg", "service_not_published"),
                };
                self.reply(rank, &reply)
            }
            "lookup_name" => {
                let reply = match message.get("service").and_then(|service| self.names.get(service)) {
                    Some(port) => Message::new("lookup_result").with("rc", 0).with("port", port),
                    None => Message::new("lookup_result").with("rc", -1).with("msg", "service_not_published"),
                };
                self.reply(rank, &reply)
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

    fn check_put(&self, job: usize, message: &Message) -> Result<(String, String), String> {
        self.check_kvsname(job, message)?;
        let key = message.get("key").filter(|key| !key.is_empty()).ok_or("missing_key")?;
        let value = message.get("value").ok_or("missing_value")?;
        if key.len() > KEY_MAX || value.len() > VALUE_MAX {
            return Err("key_or_value_too_long".to_string());
        }
        Ok((key.to_string(), value.to_string()))
    }

    fn check_get(&self, job: usize, message: &Message) -> Result<String, String> {
        self.check_kvsname(job, message)?;
        let key = message.get("key").ok_or("missing_key")?;
        self.jobs[job].visible.get(key).cloned().ok_or_else(|| format!("key_{key}_not_found"))
    }

    fn check_kvsname(&self, job: usize, message: &Message) -> Result<(), String> {
        match message.get("kvsname") {
            Some(name) if name != self.jobs[job].kvsname => Err(format!("unknown_kvsname_{name}")),
            _ => Ok(()),
        }
    }

    /// Publishes the puts made in `job` since its last barrier (a later put of a key wins) and
    /// releases its processes.
    fn complete_barrier(&mut self, job: usize) {
        let Job { visible, staged, first, size, .. } = &mut self.jobs[job];
        visible.extend(staged.drain(..));
        let processes = *first..*first + *size;
        self.jobs[job].waiting_in_barrier = 0;
        let reply = Message::new("barrier_out").with("rc", 0);
        for rank in processes {
            self.ranks[rank as usize].in_barrier = false;
            // A rank that cannot be answered will fail on its own; the others still proceed.
            let _ = self.reply(rank, &reply);
        }
    }

    /// A line of a spawn block (`mcmd=spawn` ... `endcmd`); the last block of a spawn becomes a
    /// [`ServerEvent::Spawn`], answered by the launcher.
    fn handle_spawn_line(&mut self, rank: u32, line: &str, events: &mut Vec<ServerEvent>) -> Result<(), String> {
        let slot = &mut self.ranks[rank as usize];
        let Some(lines) = slot.spawn_lines.as_mut() else {
            return match line.trim_end() {
                "mcmd=spawn" => {
                    slot.spawn_lines = Some(Vec::new());
                    Ok(())
                }
                other => Err(format!("rank {rank} sent the PMI command {other:?}, which braid run does not support")),
            };
        };
        if line.trim_end() != "endcmd" {
            lines.push(block_line(line).map_err(|error| format!("rank {rank} sent a malformed spawn line: {error}"))?);
            return Ok(());
        }
        let lines = slot.spawn_lines.take().unwrap_or_default();
        let block = parse_block(&lines).map_err(|error| format!("rank {rank} sent a malformed spawn: {error}"))?;
        let last = block.number >= block.total;
        slot.spawn_blocks.push(block);
        if last {
            let blocks = std::mem::take(&mut slot.spawn_blocks);
            let preput = blocks.last().map(|block| block.preput.clone()).unwrap_or_default();
            events.push(ServerEvent::Spawn { rank, request: SpawnRequest { commands: blocks.into_iter().map(|block| block.command).collect(), preput } });
        }
        Ok(())
    }
}
