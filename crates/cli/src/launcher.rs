//! `braid run`: starts the ranks, serves their PMI requests, forwards their output and signals,
//! and ends the whole job as soon as one rank fails.

use std::ffi::{OsStr, OsString};
use std::io::{IsTerminal, Read};
use std::net::{IpAddr, SocketAddr, TcpListener, ToSocketAddrs, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
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
use crate::preflight::{TIMED_OUT_STATUS, TIMEOUT_VARIABLE};

mod spawning;

/// How long ranks get between SIGTERM and SIGKILL once the job is being ended.
const GRACE_BEFORE_KILL: Duration = Duration::from_secs(1);
/// After the last rank exited, how long output still held open by its children is waited for.
const OUTPUT_DRAIN_QUIET: Duration = Duration::from_millis(100);
/// After a rank failed past MPI_Finalize, how long the ranks not yet known to have finalized get
/// to do so before they are stopped. MPI_Finalize's fence has completed by then, so every rank is
/// inside MPI_Finalize: its PMI finalize follows within moments unless it never comes.
const FINALIZE_WAIT: Duration = Duration::from_secs(1);

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
    /// Set when the ranks run on other hosts, started through a launch agent (ssh).
    pub hosts: Option<HostLayout>,
    /// The job's time limit (MPIEXEC_TIMEOUT): past it every rank is stopped.
    pub timeout: Option<Duration>,
    /// After a rank exited with code 0 without MPI_Finalize while others still run, how long the
    /// others get to end on their own before the job is stopped as failed
    /// (BRAID_UNFINALIZED_WAIT_S). Programs that skip MPI_Finalize at their very end (some
    /// benchmarks do) end every rank soon after; ranks that wait on the one that left would wait
    /// for ever.
    pub unfinalized_wait: Duration,
    /// Set in every rank's environment, local or remote (the profiler's, with --profile).
    pub rank_environment: Vec<(OsString, OsString)>,
    /// The cores that do the network's work, which ranks bound here avoid.
    pub network_cores: placement::NetworkCores,
}

/// Where the ranks run when the job spans hosts reached through a launch agent.
pub struct HostLayout {
    pub hosts: Vec<String>,
    /// The host (index into `hosts`) of each rank.
    pub node_of_rank: Vec<usize>,
    /// The agent command and its arguments (`ssh`); it is given the host and the remote command.
    pub agent: Vec<String>,
    /// The agent runs a program, not a shell command (srun): the command goes to `sh -c`.
    pub through_shell: bool,
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

/// Where one rank runs: its node's namespace (none: this one) or its remote host, and its place
/// among the node's ranks.
struct Site {
    namespace: Option<Namespace>,
    remote: Option<Remote>,
    local_rank: u32,
    local_size: u32,
    /// The node's name, for the rank (BRAID_NODE_NAME) where it is not this machine's.
    node_name: Option<String>,
}

/// A rank started on another host through the launch agent.
#[derive(Clone)]
struct Remote {
    host: String,
    /// What the rank is told to connect to: this machine's address as seen from `host`.
    pmi_port: SocketAddr,
}

/// What starts one process: the launched program for a rank, or a command of a spawn.
struct Launch<'l> {
    program: &'l OsStr,
    args: &'l [OsString],
    /// Its rank in its job, and the job's size.
    pmi_rank: u32,
    pmi_size: u32,
    /// Started by another job's MPI_Comm_spawn (PMI_SPAWNED=1).
    spawned: bool,
    /// Its working directory, where not the launcher's.
    wdir: Option<&'l std::path::Path>,
}

/// Why the job ended early; the first one is reported and sets the exit status.
enum Failure {
    Killed { who: String, pid: u32, signal: i32 },
    Exited { who: String, pid: u32, code: i32 },
    Aborted { who: String, pid: u32, code: i32, message: String },
    LeftEarly { who: String, pid: u32 },
    Protocol { who: String, pid: u32, detail: String },
    Launch { code: i32, detail: String },
    TimedOut { limit: Duration },
}

impl Failure {
    fn exit_status(&self) -> i32 {
        match self {
            Failure::Killed { signal, .. } => 128 + signal,
            Failure::Exited { code, .. } => *code,
            Failure::Aborted { code, .. } => code.rem_euclid(256),
            Failure::LeftEarly { .. } | Failure::Protocol { .. } => 1,
            Failure::Launch { code, .. } => *code,
            Failure::TimedOut { .. } => TIMED_OUT_STATUS,
        }
    }

    fn describe(&self) -> String {
        match self {
            Failure::Killed { who, pid, signal } => {
                let name = signal::name(*signal).unwrap_or("unknown signal");
                format!("{who} (pid {pid}) was killed by signal {signal} ({name})")
            }
            Failure::Exited { who, pid, code } => format!("{who} (pid {pid}) exited with code {code}"),
            Failure::Aborted { who, pid, code, message } if message.is_empty() => format!("{who} (pid {pid}) called MPI_Abort with code {code}"),
            Failure::Aborted { who, pid, code, message } => format!("{who} (pid {pid}) called MPI_Abort with code {code}: {message}"),
            Failure::LeftEarly { who, pid } => format!("{who} (pid {pid}) exited with code 0 without calling MPI_Finalize (no PMI finalize) while other ranks were still running"),
            Failure::Protocol { who, pid, detail } => format!("{who} (pid {pid}): {detail}"),
            Failure::Launch { detail, .. } => detail.clone(),
            Failure::TimedOut { limit } => format!("the job timed out after {0} s ({TIMEOUT_VARIABLE}={0}): every rank is being stopped", limit.as_secs()),
        }
    }
}

/// Which ranks ending the job stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stopping {
    /// The ranks that have not called MPI_Finalize: one that has no longer waits on any other
    /// rank and ends on its own, and stopping it could lose its last output (still in its stdio
    /// buffer until it exits).
    Unfinalized,
    /// Every rank: the job timed out, or the user asked for its end again.
    Everyone,
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
    // Remote ranks are never bound: this machine's CPUs say nothing about theirs.
    let placements = match if request.hosts.is_some() { Ok(vec![None; request.ranks as usize]) } else { plan(&request) } {
        Ok(placements) => placements,
        Err(reason) => {
            eprintln!("braid run: {reason}");
            return 2;
        }
    };
    // Remote ranks connect back to this listener (PMI_PORT); local ranks inherit a socket.
    let listener = match request.hosts.as_ref().map(|_| listen()).transpose() {
        Ok(listener) => listener,
        Err(reason) => {
            eprintln!("braid run: {reason}");
            return 1;
        }
    };
    let port = listener.as_ref().and_then(|listener| listener.local_addr().ok()).map_or(0, |address| address.port());
    let (sites, rails) = match sites(&request, port) {
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
    let mut job = Job {
        request: &request,
        sites,
        rails,
        server: PmiServer::new(&kvsname, request.ranks),
        listener,
        ranks: Vec::new(),
        group: None,
        failure: None,
        ending: None,
        killed: false,
        stopping: Stopping::Unfinalized,
        deadline: request.timeout.map(|limit| Instant::now() + limit),
        finalize_wait: None,
        left_early: None,
        spawned_jobs: Vec::new(),
    };
    job.server.set_universe_size(universe_size(&request));
    job.launch(&placements);
    job.supervise(&signals);
    job.end_strays();
    remove_leftover_segments(&kvsname);
    for spawned in &job.spawned_jobs {
        remove_leftover_segments(spawned);
    }
    match &job.failure {
        Some(failure) => failure.exit_status(),
        None => 0,
    }
}

/// What MPI_UNIVERSE_SIZE says: how many processes the job may grow to by spawning. Spawned
/// processes run on the node of the process that spawns them, so on one node it is the CPUs the
/// launcher may use (at least the job's ranks); elsewhere, the job's ranks.
fn universe_size(request: &JobRequest) -> u32 {
    if request.hosts.is_some() || request.nodes.is_some() {
        return request.ranks;
    }
    let cpus = affinity::calling_thread().map_or(0, |cpus| cpus.len()) as u32;
    cpus.max(request.ranks)
}

fn plan(request: &JobRequest) -> Result<Vec<Option<Vec<usize>>>, String> {
    let usable = affinity::calling_thread().map_err(|error| format!("cannot read this process's CPU affinity: {error}"))?;
    match Topology::detect() {
        Ok(topology) => placement::place(&topology, &usable, request.ranks, request.map_by, request.bind_to, &request.network_cores),
        Err(error) if matches!(request.bind_to, None | Some(BindTo::None)) => {
            eprintln!("braid run: warning: cannot read the machine topology ({error}); ranks are not bound");
            Ok(vec![None; request.ranks as usize])
        }
        Err(error) => Err(format!("cannot read the machine topology to bind ranks: {error}")),
    }
}

/// Each rank's site, and the BRAID_RAILS value the ranks get (none: the user's setting stands).
/// `port` is the PMI listener's, for remote ranks.
fn sites(request: &JobRequest, port: u16) -> Result<(Vec<Site>, Option<String>), String> {
    if let Some(layout) = &request.hosts {
        let addresses = layout.hosts.iter().map(|host| address_toward(host)).collect::<Result<Vec<IpAddr>, String>>()?;
        let sites = layout
            .node_of_rank
            .iter()
            .enumerate()
            .map(|(rank, &node)| {
                let (local_rank, local_size) = local_place(&layout.node_of_rank, rank);
                let remote = Remote { host: layout.hosts[node].clone(), pmi_port: SocketAddr::new(addresses[node], port) };
                Site { namespace: None, remote: Some(remote), local_rank, local_size, node_name: Some(layout.hosts[node].clone()) }
            })
            .collect();
        return Ok((sites, None));
    }
    let Some(layout) = &request.nodes else {
        let size = request.ranks;
        return Ok(((0..size).map(|rank| Site { namespace: None, remote: None, local_rank: rank, local_size: size, node_name: None }).collect(), None));
    };
    let namespaces = layout
        .namespaces
        .iter()
        .map(|name| Namespace::open(name).map_err(|error| format!("cannot enter the cluster's node: {error} (see braid cluster status)")))
        .collect::<Result<Vec<_>, String>>()?;
    let mut sites = Vec::with_capacity(layout.node_of_rank.len());
    for (rank, &node) in layout.node_of_rank.iter().enumerate() {
        let (local_rank, local_size) = local_place(&layout.node_of_rank, rank);
        sites.push(Site { namespace: Some(namespaces[node].clone()), remote: None, local_rank, local_size, node_name: Some(layout.namespaces[node].clone()) });
    }
    let config = braid_config::Config::from_env().map_err(|error| error.to_string())?;
    // "auto" inside a node would also pick the management network, which carries no MPI traffic.
    let rails = matches!(config.rails, braid_config::Rails::Auto).then(|| layout.rails.join(","));
    Ok((sites, rails))
}

/// Rank `rank`'s place among the ranks of its node: (local rank, local size).
fn local_place(node_of_rank: &[usize], rank: usize) -> (u32, u32) {
    let node = node_of_rank[rank];
    let local_rank = node_of_rank[..rank].iter().filter(|&&other| other == node).count() as u32;
    let local_size = node_of_rank.iter().filter(|&&other| other == node).count() as u32;
    (local_rank, local_size)
}

/// The PMI listener for remote ranks, on every address of this machine.
fn listen() -> Result<TcpListener, String> {
    let listener = TcpListener::bind("0.0.0.0:0").map_err(|error| format!("cannot open the PMI port for remote ranks: {error}"))?;
    listener.set_nonblocking(true).map_err(|error| format!("cannot open the PMI port for remote ranks: {error}"))?;
    Ok(listener)
}

/// The address of this machine that `host` can reach it at: the source address the routing table
/// picks toward `host` (connecting a UDP socket sends nothing; port 9 is only a placeholder).
fn address_toward(host: &str) -> Result<IpAddr, String> {
    let target = (host, 9)
        .to_socket_addrs()
        .map_err(|error| format!("cannot resolve host {host:?}: {error}"))?
        .min_by_key(|address| address.is_ipv6())
        .ok_or_else(|| format!("host {host:?} has no address"))?;
    let any: SocketAddr = if target.is_ipv6() { "[::]:0".parse() } else { "0.0.0.0:0".parse() }.expect("a literal address");
    let socket = UdpSocket::bind(any).map_err(|error| format!("cannot find a route to host {host}: {error}"))?;
    socket.connect(target).map_err(|error| format!("no route to host {host} ({}): {error}", target.ip()))?;
    let local = socket.local_addr().map_err(|error| format!("cannot find a route to host {host}: {error}"))?;
    Ok(local.ip())
}

/// `word` in single quotes for a POSIX shell; an embedded `'` becomes `'\''`.
pub fn shell_quote(word: &[u8]) -> Vec<u8> {
    let mut quoted = Vec::with_capacity(word.len() + 2);
    quoted.push(b'\'');
    for &byte in word {
        if byte == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(byte);
        }
    }
    quoted.push(b'\'');
    quoted
}

/// The one shell command line that starts a remote rank: enter `cwd`, set the rank's PMI and
/// BRAID_* environment (`environment`, in order), and exec the program with its arguments.
fn remote_command(cwd: &OsStr, environment: &[(OsString, OsString)], program: &OsStr, args: &[OsString]) -> OsString {
    let mut line = b"cd ".to_vec();
    line.extend(shell_quote(cwd.as_bytes()));
    line.extend_from_slice(b" && exec env");
    for (name, value) in environment {
        let mut assignment = name.as_bytes().to_vec();
        assignment.push(b'=');
        assignment.extend_from_slice(value.as_bytes());
        line.push(b' ');
        line.extend(shell_quote(&assignment));
    }
    for word in std::iter::once(program).chain(args.iter().map(OsString::as_os_str)) {
        line.push(b' ');
        line.extend(shell_quote(word.as_bytes()));
    }
    OsString::from_vec(line)
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
    /// Where remote ranks connect for PMI (with --hosts).
    listener: Option<TcpListener>,
    ranks: Vec<Rank>,
    /// The ranks' process group (the first rank's pid).
    group: Option<u32>,
    failure: Option<Failure>,
    /// When the job started being ended (SIGTERM sent).
    ending: Option<Instant>,
    killed: bool,
    /// Which ranks the ending stops.
    stopping: Stopping,
    /// When the job's time limit runs out.
    deadline: Option<Instant>,
    /// Set when a rank failed after MPI_Finalize: when the ranks that have not finalized by then
    /// are stopped.
    finalize_wait: Option<Instant>,
    /// The first rank that exited cleanly without MPI_Finalize while others ran, and when the job
    /// fails if some are still running (see [`JobRequest::unfinalized_wait`]).
    left_early: Option<(Failure, Instant)>,
    /// The key-value space names of the jobs spawned so far.
    spawned_jobs: Vec<String>,
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

    /// The command that starts a remote rank: the launch agent, given the host and the rank's
    /// command line. The agent stands for the rank here (its output, its exit status, its pid).
    fn remote_rank_command(&self, rank: u32, remote: &Remote, launch: &Launch<'_>) -> Result<Command, Failure> {
        let site = &self.sites[rank as usize];
        let cwd = match launch.wdir {
            Some(wdir) => wdir.to_path_buf(),
            None => std::env::current_dir().map_err(|error| Failure::Launch { code: 1, detail: format!("cannot read the current directory: {error}") })?,
        };
        let mut environment: Vec<(OsString, OsString)> = vec![
            ("PMI_PORT".into(), remote.pmi_port.to_string().into()),
            ("PMI_ID".into(), rank.to_string().into()),
            ("BRAID_LOCAL_RANK".into(), site.local_rank.to_string().into()),
            ("BRAID_LOCAL_SIZE".into(), site.local_size.to_string().into()),
        ];
        if launch.spawned {
            environment.push(("PMI_SPAWNED".into(), "1".into()));
        }
        environment.extend(self.added_environment(site));
        // The remote shell starts with its own environment: Braid's settings go along explicitly.
        let mut settings: Vec<(OsString, OsString)> = std::env::vars_os()
            .filter(|(name, _)| name.as_bytes().starts_with(b"BRAID_") && !matches!(name.as_bytes(), b"BRAID_LOCAL_RANK" | b"BRAID_LOCAL_SIZE" | b"BRAID_NODE_NAME"))
            .filter(|(name, _)| !self.request.rank_environment.iter().any(|(set, _)| set == name))
            .collect();
        settings.sort();
        environment.extend(settings);
        let line = remote_command(cwd.as_os_str(), &environment, launch.program, launch.args);
        let request = self.request.hosts.as_ref().expect("remote sites come from --hosts");
        let mut command = Command::new(&request.agent[0]);
        command.args(&request.agent[1..]).arg(&remote.host);
        if request.through_shell {
            command.args(["sh", "-c"]);
        }
        command.arg(line);
        Ok(command)
    }

    /// What a rank's environment gets beyond the launcher's own: its node's name where that is not
    /// this machine's, and the request's variables (the profiler's).
    fn added_environment(&self, site: &Site) -> Vec<(OsString, OsString)> {
        let node = site.node_name.as_ref().map(|node| (OsString::from("BRAID_NODE_NAME"), OsString::from(node)));
        node.into_iter().chain(self.request.rank_environment.iter().cloned()).collect()
    }

    fn start_rank(&mut self, rank: u32) -> Result<(), Failure> {
        let request = self.request;
        self.start_process(rank, &Launch { program: &request.program, args: &request.args, pmi_rank: rank, pmi_size: request.ranks, spawned: false, wdir: None })
    }

    /// Who process `process` is, for messages: a rank of the job, or of a job it spawned.
    fn label(&self, process: u32) -> String {
        match self.server.job_of(process) {
            Some((job, rank)) if process >= self.request.ranks => format!("rank {rank} of spawned job {job}"),
            _ => format!("rank {process}"),
        }
    }

    /// Starts process `process` (its site is `self.sites[process]`) as `launch` says.
    fn start_process(&mut self, process: u32, launch: &Launch<'_>) -> Result<(), Failure> {
        let launch_error = |detail: String| Failure::Launch { code: 1, detail };
        let rank = process;
        let who = self.label(process);
        let site = &self.sites[rank as usize];
        let mut local_socket = None;
        let mut command = match &site.remote {
            Some(remote) => self.remote_rank_command(rank, remote, launch)?,
            None => {
                let (ours, theirs) = UnixStream::pair().map_err(|error| launch_error(format!("cannot create the PMI socket of {who}: {error}")))?;
                fd::set_inheritable(theirs.as_fd(), true).map_err(|error| launch_error(format!("cannot pass the PMI socket to {who}: {error}")))?;
                let mut command = Command::new(launch.program);
                command
                    .args(launch.args)
                    .env("PMI_FD", theirs.as_raw_fd().to_string())
                    .env("PMI_RANK", launch.pmi_rank.to_string())
                    .env("PMI_SIZE", launch.pmi_size.to_string())
                    .env("BRAID_LOCAL_RANK", site.local_rank.to_string())
                    .env("BRAID_LOCAL_SIZE", site.local_size.to_string());
                if let Some(wdir) = launch.wdir {
                    command.current_dir(wdir);
                }
                local_socket = Some((ours, theirs));
                command
            }
        };
        if launch.spawned {
            command.env("PMI_SPAWNED", "1");
        } else {
            command.env_remove("PMI_SPAWNED");
        }
        command
            .env_remove("PMI_PORT")
            .env_remove("PMI_ID")
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
        if site.remote.is_none() {
            command.envs(self.added_environment(site));
        }
        if let Some(namespace) = &site.namespace {
            namespace.enter_on_exec(&mut command);
        }
        let started = match (&site.remote, &self.request.hosts) {
            (Some(_), Some(hosts)) => format!("the launch agent {:?}", hosts.agent.join(" ")),
            _ => launch.program.to_string_lossy().into_owned(),
        };
        let mut child = command.spawn().map_err(|error| {
            let code = match error.kind() {
                std::io::ErrorKind::NotFound => 127,
                std::io::ErrorKind::PermissionDenied => 126,
                _ => 1,
            };
            Failure::Launch { code, detail: format!("cannot start {who}: {started}: {error}") }
        })?;
        let ours = local_socket.map(|(ours, theirs)| {
            drop(theirs);
            ours
        });
        let pid = child.id();
        self.group.get_or_insert(pid);
        let tag = self.request.tag_output;
        let stdout = OutputStream { pipe: child.stdout.take(), forwarder: LineForwarder::new(rank, tag, Target::Stdout) };
        let stderr = OutputStream { pipe: child.stderr.take(), forwarder: LineForwarder::new(rank, tag, Target::Stderr) };
        self.ranks.push(Rank { pid, child, stdout, stderr, status: None });
        match ours {
            Some(ours) => self.server.attach(rank, ours).map_err(|error| launch_error(format!("cannot serve PMI for {who}: {error}"))),
            // A remote rank connects to the listener later; see `accept_ranks`.
            None => Ok(()),
        }
    }

    /// Takes the remote ranks' pending PMI connections. A connection that is not a rank of this
    /// job is refused with a warning: the rank it should have been fails on its own.
    fn accept_ranks(&mut self) {
        let Some(listener) = &self.listener else { return };
        loop {
            match listener.accept() {
                Ok((stream, _)) => {
                    if let Err(error) = self.server.accept_network(stream) {
                        eprintln!("braid run: warning: {error}");
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(error) => {
                    eprintln!("braid run: warning: accepting a PMI connection failed: {error}");
                    return;
                }
            }
        }
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
            let timeout = if all_exited { Some(OUTPUT_DRAIN_QUIET) } else { self.next_deadline().map(|at| at.saturating_duration_since(Instant::now())) };
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
                    Source::Listener => self.accept_ranks(),
                    Source::Pmi(rank) => {
                        let events = self.server.service(rank);
                        self.handle_pmi(events);
                    }
                    Source::Stdout(rank) => self.ranks[rank as usize].stdout.pump(),
                    Source::Stderr(rank) => self.ranks[rank as usize].stderr.pump(),
                }
            }
            self.reap();
            self.act_on_deadlines();
        }
    }

    /// Ends the processes the ranks started and left running (their process group outlives them),
    /// as the job's end ends its processes under other launchers: SIGTERM, then SIGKILL for what
    /// is still there after GRACE_BEFORE_KILL.
    fn end_strays(&self) {
        let Some(group) = self.group else { return };
        if signal::send_to_group(group, libc::SIGTERM).is_err() {
            return;
        }
        let start = Instant::now();
        while start.elapsed() < GRACE_BEFORE_KILL {
            if signal::send_to_group(group, 0).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = signal::send_to_group(group, libc::SIGKILL);
    }

    /// The earliest moment the event loop must wake up for, whatever the ranks do.
    fn next_deadline(&self) -> Option<Instant> {
        let kill_at = self.ending.filter(|_| !self.killed).map(|start| start + GRACE_BEFORE_KILL);
        let left_early = self.left_early.as_ref().map(|(_, until)| *until);
        [kill_at, self.deadline, self.finalize_wait, left_early].into_iter().flatten().min()
    }

    /// Kills what outlived the grace period, ends a job past its time limit, and stops the ranks
    /// that did not finalize in time after a rank failed past MPI_Finalize.
    fn act_on_deadlines(&mut self) {
        let now = Instant::now();
        if self.deadline.is_some_and(|deadline| now >= deadline) {
            self.deadline = None;
            let limit = self.request.timeout.unwrap_or_default();
            if self.failure.is_none() {
                self.record(Failure::TimedOut { limit }, "");
            } else {
                eprintln!("braid run: {}", Failure::TimedOut { limit }.describe());
            }
            self.stop(Stopping::Everyone);
        }
        if self.finalize_wait.is_some_and(|wait_end| now >= wait_end) {
            self.finalize_wait = None;
            self.stop(Stopping::Unfinalized);
        }
        if self.left_early.as_ref().is_some_and(|(_, until)| now >= *until) {
            if let Some((failure, _)) = self.left_early.take().filter(|_| self.running() > 0) {
                self.record(failure, &format!(", and still were {} s later", self.request.unfinalized_wait.as_secs()));
                self.stop(Stopping::Unfinalized);
            }
        }
        if let Some(start) = self.ending {
            if !self.killed && start.elapsed() >= GRACE_BEFORE_KILL {
                self.kill_all(libc::SIGKILL);
                self.killed = true;
            }
        }
    }

    fn wait(&self, signals: &SignalQueue, timeout: Option<Duration>) -> std::io::Result<(Vec<Source>, Vec<fd::Readiness>)> {
        let mut sources = vec![Source::Signals];
        let mut fds: Vec<BorrowedFd<'_>> = vec![signals.as_fd()];
        if let Some(listener) = &self.listener {
            sources.push(Source::Listener);
            fds.push(listener.as_fd());
        }
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
                self.stopping = Stopping::Everyone;
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
                    self.fail(Failure::Aborted { who: self.label(rank), pid, code, message });
                }
                ServerEvent::ProtocolError { rank, detail } => {
                    let pid = self.ranks[rank as usize].pid;
                    self.fail(Failure::Protocol { who: self.label(rank), pid, detail });
                }
                ServerEvent::Spawn { rank, request } => {
                    let outcome = self.spawn(rank, &request);
                    self.server.answer_spawn(rank, outcome);
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
                (Some(signal), _) => Some(Failure::Killed { who: self.label(rank), pid, signal }),
                (None, Some(0)) if self.server.initialized(rank) && !self.server.finalized(rank) && self.running() > 0 => Some(Failure::LeftEarly { who: self.label(rank), pid }),
                (None, Some(0)) => None,
                (None, code) => Some(Failure::Exited { who: self.label(rank), pid, code: code.unwrap_or(1) }),
            };
            match failure {
                Some(failure) if self.server.finalized(rank) => self.fail_after_finalize(failure),
                Some(Failure::LeftEarly { who, pid }) => self.left_early(who, pid),
                Some(failure) => self.fail(failure),
                None => {}
            }
        }
    }

    /// A rank exited cleanly without MPI_Finalize while others run: a warning now, a failure
    /// if they are still running after [`JobRequest::unfinalized_wait`] (or at once, as the
    /// cause, if another rank fails first).
    fn left_early(&mut self, who: String, pid: u32) {
        if self.left_early.is_some() || self.failure.is_some() || self.ending.is_some() {
            return;
        }
        let wait = self.request.unfinalized_wait.as_secs();
        eprintln!("braid run: warning: {who} (pid {pid}) exited without calling MPI_Finalize; the other ranks have {wait} s to end (BRAID_UNFINALIZED_WAIT_S)");
        self.left_early = Some((Failure::LeftEarly { who, pid }, Instant::now() + self.request.unfinalized_wait));
    }

    fn reap_blocking(&mut self) {
        for rank in &mut self.ranks {
            if rank.status.is_none() {
                rank.status = rank.child.wait().ok();
            }
        }
    }

    /// Records the first failure, reports it, and starts ending the job (for the ranks that have
    /// not finalized).
    fn fail(&mut self, failure: Failure) {
        self.record(failure, "");
        self.stop(Stopping::Unfinalized);
    }

    /// A rank that had called MPI_Finalize failed: the job's status is its failure, but the
    /// other ranks are all in MPI_Finalize or past it, and none waits on this one. Those that
    /// finalize end on their own; the others are stopped after [`FINALIZE_WAIT`].
    fn fail_after_finalize(&mut self, failure: Failure) {
        if self.record(failure, " after MPI_Finalize") && self.ending.is_none() {
            self.finalize_wait = Some(Instant::now() + FINALIZE_WAIT);
        }
    }

    /// Records and reports `failure` (with `context` after its description) if it is the first;
    /// returns whether it was.
    fn record(&mut self, failure: Failure, context: &str) -> bool {
        // A rank that left without MPI_Finalize before this failure is its likelier cause: the
        // job's status is that rank's, and both are reported.
        if let Some((early, _)) = self.left_early.take().filter(|_| self.failure.is_none()) {
            eprintln!("braid run: {}", early.describe());
            eprintln!("braid run: then {}{context}", failure.describe());
            self.failure = Some(early);
            return true;
        }
        if self.failure.is_some() {
            return false;
        }
        eprintln!("braid run: {}{context}", failure.describe());
        self.failure = Some(failure);
        true
    }

    /// Starts ending the job (SIGTERM now, SIGKILL after the grace period) for `whom`; a job
    /// being ended for the unfinalized ranks can still be widened to every rank.
    fn stop(&mut self, whom: Stopping) {
        let widened = whom == Stopping::Everyone && self.stopping != Stopping::Everyone;
        if self.ending.is_some() && !widened {
            return;
        }
        // With every rank stopped, the grace period starts again.
        self.stopping = if widened { Stopping::Everyone } else { self.stopping };
        self.killed = false;
        self.finalize_wait = None;
        self.ending = Some(Instant::now());
        if self.stopping == Stopping::Unfinalized {
            // A finalize that arrived but was not read yet spares its rank.
            self.service_every_rank();
        }
        self.kill_all(libc::SIGTERM);
    }

    /// Reads and answers whatever the ranks sent over PMI.
    fn service_every_rank(&mut self) {
        for rank in 0..self.ranks.len() as u32 {
            let events = self.server.service(rank);
            self.handle_pmi(events);
        }
    }

    /// Sends a signal to the ranks' process group, and to each live rank that left the group
    /// (only for the signals that end the job: a forwarded signal must arrive once). While the
    /// job is being ended for its unfinalized ranks only and some rank has finalized, the
    /// unfinalized ranks are signalled one by one instead: the group would reach all.
    fn kill_all(&mut self, signal_number: i32) {
        if self.running() == 0 {
            return;
        }
        let ending = matches!(signal_number, libc::SIGTERM | libc::SIGKILL) && self.ending.is_some();
        if ending && self.stopping == Stopping::Unfinalized {
            let running = || self.ranks.iter().enumerate().filter(|(_, rank)| rank.status.is_none());
            if running().any(|(index, _)| self.server.finalized(index as u32)) {
                for (_, rank) in running().filter(|(index, _)| !self.server.finalized(*index as u32)) {
                    let _ = signal::send(rank.pid, signal_number);
                }
                return;
            }
        }
        let group_reached = self.group.is_some_and(|group| signal::send_to_group(group, signal_number).is_ok());
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
    Listener,
    Pmi(u32),
    Stdout(u32),
    Stderr(u32),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_quote_wraps_words_and_escapes_single_quotes() {
        assert_eq!(shell_quote(b"plain"), b"'plain'");
        assert_eq!(shell_quote(b""), b"''");
        assert_eq!(shell_quote(b"it's $HOME"), b"'it'\\''s $HOME'");
    }

    #[test]
    fn remote_command_sets_the_environment_and_execs_the_program() {
        let environment = vec![("PMI_PORT".into(), "10.0.0.1:4000".into()), ("BRAID_X".into(), "a b".into())];
        let line = remote_command(OsStr::new("/tmp/my dir"), &environment, OsStr::new("./app"), &["--name".into(), "o'k".into()]);
        assert_eq!(line, OsStr::new("cd '/tmp/my dir' && exec env 'PMI_PORT=10.0.0.1:4000' 'BRAID_X=a b' './app' '--name' 'o'\\''k'"));
    }

    #[test]
    fn remote_command_survives_a_shell() {
        let args: Vec<OsString> = vec!["-c".into(), "printf '%s|' \"$0\" \"$BRAID_X\"".into(), "it's".into()];
        let line = remote_command(OsStr::new("/"), &[("BRAID_X".into(), "a 'b' $c".into())], OsStr::new("sh"), &args);
        let output = Command::new("sh").arg("-c").arg(&line).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&output.stdout), "it's|a 'b' $c|");
    }

    #[test]
    fn the_address_toward_loopback_is_loopback() {
        assert_eq!(address_toward("127.0.0.1").unwrap(), IpAddr::from([127, 0, 0, 1]));
        assert!(address_toward("no-such-host.invalid").unwrap_err().contains("cannot resolve host"));
    }
}
