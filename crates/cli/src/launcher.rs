//! `braid run`: starts the ranks, serves their PMI requests, forwards their output and signals,
//! and ends the whole job as soon as one rank fails.

use std::ffi::OsString;
use std::io::{IsTerminal, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use braid_pmi::server::{PmiServer, ServerEvent};
use braid_sys::netns::Namespace;
use braid_sys::signal::{self, SignalQueue};
use braid_sys::topology::Topology;
use braid_sys::{affinity, fd};

use crate::output::{LineForwarder, Target};
use crate::placement::{self, BindTo, MapBy};

/// How long ranks get between SIGTERM and SIGKILL once the job is being ended.
const GRACE_BEFORE_KILL: Duration = Duration::from_secs(1);
/// After the last rank exited, how long output still held open by its children is waited for.
const OUTPUT_DRAIN_QUIET: Duration = Duration::from_millis(100);

/// Signals passed on to the ranks; the first three also mean "end the job".
const FORWARDED_SIGNALS: [i32; 5] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGUSR1, libc::SIGUSR2];

/// What `braid run` was asked to do.
pub struct JobRequest {
    pub ranks: u32,
    pub map_by: MapBy,
    pub bind_to: Option<BindTo>,
    pub tag_output: bool,
    pub program: OsString,
    pub args: Vec<OsString>,
    /// Set when the ranks run on the nodes of a virtual cluster rather than all on this node.
    pub nodes: Option<NodeLayout>,
}

/// Where the ranks run when the job spans the nodes of a virtual cluster.
pub struct NodeLayout {
    /// Each node's network namespace.
    pub namespaces: Vec<String>,
    /// The node of each rank.
    pub node_of_rank: Vec<usize>,
    /// The rails' interface names, given to the ranks as BRAID_RAILS unless the user named rails.
    pub rails: Vec<String>,
}

/// Where one rank runs: its node's namespace (none: this one) and its place among the node's ranks.
struct Site {
    namespace: Option<Namespace>,
    local_rank: u32,
    local_size: u32,
}

/// Why the job ended early; the first one is reported and sets the exit status.
enum Failure {
    Killed { rank: u32, pid: u32, signal: i32 },
    Exited { rank: u32, pid: u32, code: i32 },
    Aborted { rank: u32, pid: u32, code: i32, message: String },
    LeftEarly { rank: u32, pid: u32 },
    Protocol { rank: u32, pid: u32, detail: String },
    Launch { code: i32, detail: String },
}

impl Failure {
    fn exit_status(&self) -> i32 {
        match self {
            Failure::Killed { signal, .. } => 128 + signal,
            Failure::Exited { code, .. } => *code,
            Failure::Aborted { code, .. } => code.rem_euclid(256),
            Failure::LeftEarly { .. } | Failure::Protocol { .. } => 1,
            Failure::Launch { code, .. } => *code,
        }
    }

    fn describe(&self) -> String {
        match self {
            Failure::Killed { rank, pid, signal } => {
                let name = signal::name(*signal).unwrap_or("unknown signal");
                format!("rank {rank} (pid {pid}) was killed by signal {signal} ({name})")
            }
            Failure::Exited { rank, pid, code } => format!("rank {rank} (pid {pid}) exited with code {code}"),
            Failure::Aborted { rank, pid, code, message } if message.is_empty() => format!("rank {rank} (pid {pid}) called MPI_Abort with code {code}"),
            Failure::Aborted { rank, pid, code, message } => format!("rank {rank} (pid {pid}) called MPI_Abort with code {code}: {message}"),
            Failure::LeftEarly { rank, pid } => format!(
                "rank {rank} (pid {pid}) exited with code 0 without calling MPI_Finalize (no PMI finalize) while other ranks were still running"
            ),
            Failure::Protocol { rank, pid, detail } => format!("rank {rank} (pid {pid}): {detail}"),
            Failure::Launch { detail, .. } => detail.clone(),
        }
    }
}

/// One stream of a rank's output, while it is open.
struct OutputStream<R> {
    pipe: Option<R>,
    forwarder: LineForwarder,
}

impl<R: Read + AsFd> OutputStream<R> {
    /// Forwards what is available; closes the stream at end of file.
    fn pump(&mut self) {
        let Some(pipe) = self.pipe.as_mut() else { return };
        let mut buffer = [0u8; 8192];
        match pipe.read(&mut buffer) {
            Ok(0) | Err(_) => {
                self.pipe = None;
                self.forwarder.finish();
            }
            Ok(read) => self.forwarder.push(&buffer[..read]),
        }
    }
}

struct Rank {
    pid: u32,
    child: Child,
    stdout: OutputStream<ChildStdout>,
    stderr: OutputStream<ChildStderr>,
    status: Option<ExitStatus>,
}

/// Runs the job; returns the launcher's exit status.
pub fn run(request: JobRequest) -> i32 {
    if request.ranks == 0 {
        eprintln!("braid run: -n must be at least 1");
        return 2;
    }
    let placements = match plan(&request) {
        Ok(placements) => placements,
        Err(reason) => {
            eprintln!("braid run: {reason}");
            return 2;
        }
    };
    let (sites, rails) = match sites(&request) {
        Ok(found) => found,
        Err(reason) => {
            eprintln!("braid run: {reason}");
            return 2;
        }
    };
    let mut watched: Vec<i32> = FORWARDED_SIGNALS.to_vec();
    watched.push(libc::SIGCHLD);
    let signals = match SignalQueue::new(&watched) {
        Ok(signals) => signals,
        Err(error) => {
            eprintln!("braid run: cannot watch signals: {error}");
            return 1;
        }
    };
    let kvsname = job_name();
    let mut job = Job { request: &request, sites, rails, server: PmiServer::new(&kvsname, request.ranks), ranks: Vec::new(), group: None, failure: None, ending: None, killed: false };
    job.launch(&placements);
    job.supervise(&signals);
    remove_leftover_segments(&kvsname);
    match &job.failure {
        Some(failure) => failure.exit_status(),
        None => 0,
    }
}

fn plan(request: &JobRequest) -> Result<Vec<Option<Vec<usize>>>, String> {
    let usable = affinity::calling_thread().map_err(|error| format!("cannot read this process's CPU affinity: {error}"))?;
    match Topology::detect() {
        Ok(topology) => placement::place(&topology, &usable, request.ranks, request.map_by, request.bind_to),
        Err(error) if matches!(request.bind_to, None | Some(BindTo::None)) => {
            eprintln!("braid run: warning: cannot read the machine topology ({error}); ranks are not bound");
            Ok(vec![None; request.ranks as usize])
        }
        Err(error) => Err(format!("cannot read the machine topology to bind ranks: {error}")),
    }
}

/// Each rank's site, and the BRAID_RAILS value the ranks get (none: the user's setting stands).
fn sites(request: &JobRequest) -> Result<(Vec<Site>, Option<String>), String> {
    let Some(layout) = &request.nodes else {
        let size = request.ranks;
        return Ok(((0..size).map(|rank| Site { namespace: None, local_rank: rank, local_size: size }).collect(), None));
    };
    let namespaces = layout
        .namespaces
        .iter()
        .map(|name| Namespace::open(name).map_err(|error| format!("cannot enter the cluster's node: {error} (see braid cluster status)")))
        .collect::<Result<Vec<_>, String>>()?;
    let mut sites = Vec::with_capacity(layout.node_of_rank.len());
    for (rank, &node) in layout.node_of_rank.iter().enumerate() {
        let local_rank = layout.node_of_rank[..rank].iter().filter(|&&other| other == node).count() as u32;
        let local_size = layout.node_of_rank.iter().filter(|&&other| other == node).count() as u32;
        sites.push(Site { namespace: Some(namespaces[node].clone()), local_rank, local_size });
    }
    let config = braid_config::Config::from_env().map_err(|error| error.to_string())?;
    // "auto" inside a node would also pick the management network, which carries no MPI traffic.
    let rails = matches!(config.rails, braid_config::Rails::Auto).then(|| layout.rails.join(","));
    Ok((sites, rails))
}

/// A PMI key-value space name that is unique per job and safe in file names.
fn job_name() -> String {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.subsec_nanos());
    format!("kvs_{}_{nanos}", std::process::id())
}

/// Ranks unlink their shared-memory files themselves; this catches the ones that died first.
fn remove_leftover_segments(kvsname: &str) {
    let prefix = format!("braid-{kvsname}-");
    let Ok(entries) = std::fs::read_dir("/dev/shm") else { return };
    for entry in entries.flatten() {
        if entry.file_name().to_str().is_some_and(|name| name.starts_with(&prefix)) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

struct Job<'a> {
    request: &'a JobRequest,
    sites: Vec<Site>,
    /// BRAID_RAILS for every rank, when the launcher chooses it.
    rails: Option<String>,
    server: PmiServer,
    ranks: Vec<Rank>,
    /// The ranks' process group (the first rank's pid).
    group: Option<u32>,
    failure: Option<Failure>,
    /// When the job started being ended (SIGTERM sent).
    ending: Option<Instant>,
    killed: bool,
}

impl Job<'_> {
    fn launch(&mut self, placements: &[Option<Vec<usize>>]) {
        let original_affinity = affinity::calling_thread().unwrap_or_default();
        for (rank, placement) in (0..self.request.ranks).zip(placements) {
            // A child inherits the affinity of the thread that starts it.
            let cpus = placement.as_deref().unwrap_or(&original_affinity);
            if let Err(error) = affinity::set_calling_thread(cpus) {
                self.fail(Failure::Launch { code: 1, detail: format!("cannot bind rank {rank} to CPUs {cpus:?}: {error}") });
                break;
            }
            if let Err(failure) = self.start_rank(rank) {
                self.fail(failure);
                break;
            }
        }
        let _ = affinity::set_calling_thread(&original_affinity);
    }

    fn start_rank(&mut self, rank: u32) -> Result<(), Failure> {
        let launch_error = |detail: String| Failure::Launch { code: 1, detail };
        let (ours, theirs) = UnixStream::pair().map_err(|error| launch_error(format!("cannot create the PMI socket of rank {rank}: {error}")))?;
        fd::set_inheritable(theirs.as_fd(), true).map_err(|error| launch_error(format!("cannot pass the PMI socket to rank {rank}: {error}")))?;
        let size = self.request.ranks;
        let site = &self.sites[rank as usize];
        let mut command = Command::new(&self.request.program);
        command
            .args(&self.request.args)
            .env_remove("PMI_PORT")
            .env_remove("PMI_ID")
            .env("PMI_FD", theirs.as_raw_fd().to_string())
            .env("PMI_RANK", rank.to_string())
            .env("PMI_SIZE", size.to_string())
            .env("BRAID_LOCAL_RANK", site.local_rank.to_string())
            .env("BRAID_LOCAL_SIZE", site.local_size.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // The ranks get their own group: a terminal's Ctrl-C reaches only the launcher, which forwards it.
            .process_group(self.group.map_or(0, |group| group as i32));
        // Rank 0 reads the launcher's stdin when it is a file or pipe; a terminal would stop a background group.
        let stdin_is_data = rank == 0 && !std::io::stdin().is_terminal();
        command.stdin(if stdin_is_data { Stdio::inherit() } else { Stdio::null() });
        if let Some(rails) = &self.rails {
            command.env("BRAID_RAILS", rails);
        }
        if let Some(namespace) = &site.namespace {
            namespace.enter_on_exec(&mut command);
        }
        let mut child = command.spawn().map_err(|error| {
            let code = match error.kind() {
                std::io::ErrorKind::NotFound => 127,
                std::io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            };
            Failure::Launch { code, detail: format!("cannot start rank {rank}: {}: {error}", self.request.program.to_string_lossy()) }
        })?;
        drop(theirs);
        let pid = child.id();
        self.group.get_or_insert(pid);
        let tag = self.request.tag_output;
        let stdout = OutputStream { pipe: child.stdout.take(), forwarder: LineForwarder::new(rank, tag, Target::Stdout) };
        let stderr = OutputStream { pipe: child.stderr.take(), forwarder: LineForwarder::new(rank, tag, Target::Stderr) };
        self.ranks.push(Rank { pid, child, stdout, stderr, status: None });
        self.server.attach(rank, ours).map_err(|error| launch_error(format!("cannot serve PMI for rank {rank}: {error}")))
    }

    fn running(&self) -> usize {
        self.ranks.iter().filter(|rank| rank.status.is_none()).count()
    }

    /// The event loop: until every rank has exited and its output is drained.
    fn supervise(&mut self, signals: &SignalQueue) {
        loop {
            let all_exited = self.running() == 0;
            let outputs_open = self.ranks.iter().any(|rank| rank.stdout.pipe.is_some() || rank.stderr.pipe.is_some());
            if all_exited && !outputs_open {
                return;
            }
            let timeout = if all_exited {
                Some(OUTPUT_DRAIN_QUIET)
            } else {
                self.ending.filter(|_| !self.killed).map(|start| (start + GRACE_BEFORE_KILL).saturating_duration_since(Instant::now()))
            };
            let (sources, ready) = match self.wait(signals, timeout) {
                Ok(result) => result,
                Err(error) => {
                    self.fail(Failure::Launch { code: 1, detail: format!("waiting for the ranks failed: {error}") });
                    self.kill_all(libc::SIGKILL);
                    self.reap_blocking();
                    return;
                }
            };
            if all_exited && !ready.iter().any(|readiness| readiness.any()) {
                // Only the ranks' own children still hold the output open: stop waiting for them.
                return;
            }
            for (source, readiness) in sources.into_iter().zip(ready) {
                if !readiness.any() {
                    continue;
                }
                match source {
                    Source::Signals => self.handle_signals(signals),
                    Source::Pmi(rank) => {
                        let events = self.server.service(rank);
                        self.handle_pmi(events);
                    }
                    Source::Stdout(rank) => self.ranks[rank as usize].stdout.pump(),
                    Source::Stderr(rank) => self.ranks[rank as usize].stderr.pump(),
                }
            }
            self.reap();
            if let Some(start) = self.ending {
                if !self.killed && start.elapsed() >= GRACE_BEFORE_KILL {
                    self.kill_all(libc::SIGKILL);
                    self.killed = true;
                }
            }
        }
    }

    fn wait(&self, signals: &SignalQueue, timeout: Option<Duration>) -> std::io::Result<(Vec<Source>, Vec<fd::Readiness>)> {
        let mut sources = vec![Source::Signals];
        let mut fds: Vec<BorrowedFd<'_>> = vec![signals.as_fd()];
        for (rank, descriptor) in self.server.descriptors() {
            sources.push(Source::Pmi(rank));
            fds.push(descriptor);
        }
        for (index, rank) in self.ranks.iter().enumerate() {
            if let Some(pipe) = &rank.stdout.pipe {
                sources.push(Source::Stdout(index as u32));
                fds.push(pipe.as_fd());
            }
            if let Some(pipe) = &rank.stderr.pipe {
                sources.push(Source::Stderr(index as u32));
                fds.push(pipe.as_fd());
            }
        }
        let ready = fd::poll_readable(&fds, timeout)?;
        Ok((sources, ready))
    }

    fn handle_signals(&mut self, signals: &SignalQueue) {
        for received in signals.take().unwrap_or_default() {
            if received == libc::SIGCHLD {
                continue;
            }
            let ends_job = matches!(received, libc::SIGINT | libc::SIGTERM | libc::SIGHUP);
            if ends_job && self.ending.is_some() {
                // Asked again while the job is already ending: do not wait for the grace period.
                self.kill_all(libc::SIGKILL);
                self.killed = true;
            } else {
                self.kill_all(received);
            }
        }
    }

    fn handle_pmi(&mut self, events: Vec<ServerEvent>) {
        for event in events {
            match event {
                ServerEvent::Aborted { rank, code, message } => {
                    let pid = self.ranks[rank as usize].pid;
                    self.fail(Failure::Aborted { rank, pid, code, message });
                }
                ServerEvent::ProtocolError { rank, detail } => {
                    let pid = self.ranks[rank as usize].pid;
                    self.fail(Failure::Protocol { rank, pid, detail });
                }
                ServerEvent::Initialized { .. } | ServerEvent::Finalized { .. } | ServerEvent::Closed { .. } => {}
            }
        }
    }

    /// Collects the ranks that exited and judges how they ended.
    fn reap(&mut self) {
        let mut exited = Vec::new();
        for index in 0..self.ranks.len() {
            if self.ranks[index].status.is_some() {
                continue;
            }
            if let Ok(Some(status)) = self.ranks[index].child.try_wait() {
                self.ranks[index].status = Some(status);
                exited.push((index as u32, status));
            }
        }
        // Judged only once every exit of this round is collected: ranks ending together are not
        // "leaving while others still run".
        for (rank, status) in exited {
            // An abort sent just before exiting is still in the socket: it explains the exit.
            let last_events = self.server.service(rank);
            self.handle_pmi(last_events);
            let pid = self.ranks[rank as usize].pid;
            let failure = match (status.signal(), status.code()) {
                (Some(signal), _) => Some(Failure::Killed { rank, pid, signal }),
                (None, Some(0)) if self.server.initialized(rank) && !self.server.finalized(rank) && self.running() > 0 => {
                    Some(Failure::LeftEarly { rank, pid })
                }
                (None, Some(0)) => None,
                (None, code) => Some(Failure::Exited { rank, pid, code: code.unwrap_or(1) }),
            };
            if let Some(failure) = failure {
                self.fail(failure);
            }
        }
    }

    fn reap_blocking(&mut self) {
        for rank in &mut self.ranks {
            if rank.status.is_none() {
                rank.status = rank.child.wait().ok();
            }
        }
    }

    /// Records the first failure, reports it, and starts ending the job.
    fn fail(&mut self, failure: Failure) {
        if self.failure.is_some() {
            return;
        }
        eprintln!("braid run: {}", failure.describe());
        self.failure = Some(failure);
        self.ending = Some(Instant::now());
        self.kill_all(libc::SIGTERM);
    }

    /// Sends a signal to the ranks' process group, and to each live rank that left the group
    /// (only for the signals that end the job: a forwarded signal must arrive once).
    fn kill_all(&mut self, signal_number: i32) {
        if self.running() == 0 {
            return;
        }
        let group_reached = self.group.is_some_and(|group| signal::send_to_group(group, signal_number).is_ok());
        let ending = matches!(signal_number, libc::SIGTERM | libc::SIGKILL) && self.ending.is_some();
        for rank in self.ranks.iter().filter(|rank| rank.status.is_none()) {
            if !group_reached || (ending && !in_group(rank.pid, self.group)) {
                let _ = signal::send(rank.pid, signal_number);
            }
        }
    }
}

/// Whether process `pid` is still in process group `group` (field 5 of /proc/PID/stat).
fn in_group(pid: u32, group: Option<u32>) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return true };
    // The command name (field 2) may contain spaces; the fields after it do not.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after_name.split_whitespace().nth(2).and_then(|field| field.parse::<u32>().ok()) == group
}

enum Source {
    Signals,
    Pmi(u32),
    Stdout(u32),
    Stderr(u32),
}
