//! The rank side of PMI-1, and the singleton bootstrap of a program started without a launcher.
//!
//! A launcher hands each rank its connection in the environment, as MPICH's Hydra does:
//! `PMI_FD` (an inherited socket) with `PMI_RANK` and `PMI_SIZE`, or `PMI_PORT=host:port` with
//! `PMI_ID`, in which case rank and size come from the `initack` handshake. These are the launcher's
//! hand-off, not Braid settings, which is why they are read here and not in braid-config.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::spawn::SpawnRequest;
use crate::wire::{check_word, LineBuffer, Message, KEY_MAX, VALUE_MAX};
use crate::{Bootstrap, BootstrapError};

enum Connection {
    Inherited(UnixStream),
    Network(TcpStream),
}

impl Connection {
    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        match self {
            Connection::Inherited(stream) => stream.write_all(bytes),
            Connection::Network(stream) => stream.write_all(bytes),
        }
    }

    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Connection::Inherited(stream) => stream.read(buffer),
            Connection::Network(stream) => stream.read(buffer),
        }
    }
}

/// A rank's connection to its PMI-1 server (`braid run`, or `mpiexec.hydra`).
pub struct PmiClient {
    connection: Connection,
    lines: LineBuffer,
    rank: u32,
    size: u32,
    kvsname: String,
    appnum: i32,
    value_max: usize,
    finalized: bool,
    /// Started by another job's MPI_Comm_spawn (`PMI_SPAWNED=1`).
    spawned: bool,
}

impl PmiClient {
    /// Connects to the launcher named in this process's environment; `Ok(None)` when there is none
    /// (the program was started on its own: use [`Singleton`]).
    pub fn from_env() -> Result<Option<PmiClient>, BootstrapError> {
        PmiClient::from_lookup(|name| std::env::var(name).ok())
    }

    /// [`PmiClient::from_env`] over any name -> value lookup.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<PmiClient>, BootstrapError> {
        if let Some(fd_text) = lookup("PMI_FD") {
            let fd: i32 = parse_env("PMI_FD", &fd_text)?;
            let rank: u32 = parse_env("PMI_RANK", &lookup("PMI_RANK").ok_or_else(|| missing("PMI_RANK"))?)?;
            let size: u32 = parse_env("PMI_SIZE", &lookup("PMI_SIZE").ok_or_else(|| missing("PMI_SIZE"))?)?;
            let owned = braid_sys::fd::duplicate_inherited(fd).map_err(|error| failure("connect", format!("PMI_FD={fd} is not an open descriptor: {error}")))?;
            return PmiClient::over_stream(UnixStream::from(owned), rank, size).map(|client| Some(client.spawned_if(&lookup)));
        }
        if let Some(port) = lookup("PMI_PORT") {
            let id: u32 = parse_env("PMI_ID", &lookup("PMI_ID").ok_or_else(|| missing("PMI_ID"))?)?;
            let stream = TcpStream::connect(port.as_str()).map_err(|error| failure("connect", format!("cannot reach the launcher at PMI_PORT={port}: {error}")))?;
            let _ = stream.set_nodelay(true);
            return PmiClient::over_network(stream, id).map(|client| Some(client.spawned_if(&lookup)));
        }
        Ok(None)
    }

    /// Marks the client as spawned where the launcher says so (`PMI_SPAWNED=1`, as Hydra does).
    fn spawned_if(mut self, lookup: &impl Fn(&str) -> Option<String>) -> PmiClient {
        self.spawned = lookup("PMI_SPAWNED").is_some_and(|value| value.trim() == "1");
        self
    }

    /// Speaks PMI-1 over an already connected socket (what `PMI_FD` names) as rank `rank` of `size`.
    pub fn over_stream(stream: UnixStream, rank: u32, size: u32) -> Result<PmiClient, BootstrapError> {
        PmiClient::handshake(Connection::Inherited(stream), rank, size)
    }

    fn over_network(stream: TcpStream, id: u32) -> Result<PmiClient, BootstrapError> {
        let mut client = PmiClient::unconnected(Connection::Network(stream));
        client.send("connect", &Message::new("initack").with("pmiid", id))?;
        client.expect("connect", "initack")?;
        let (mut rank, mut size, mut debug) = (None, None, None);
        while rank.is_none() || size.is_none() || debug.is_none() {
            let set = client.expect("connect", "set")?;
            let parsed = |text: &str| text.parse::<u32>().map_err(|_| failure("connect", format!("bad value in {set:?}")));
            if let Some(value) = set.get("rank") {
                rank = Some(parsed(value)?);
            } else if let Some(value) = set.get("size") {
                size = Some(parsed(value)?);
            } else if set.get("debug").is_some() {
                debug = Some(());
            }
        }
        let (rank, size) = (rank.unwrap_or(0), size.unwrap_or(0));
        PmiClient::handshake(client.connection, rank, size)
    }

    fn unconnected(connection: Connection) -> PmiClient {
        PmiClient { connection, lines: LineBuffer::new(), rank: 0, size: 0, kvsname: String::new(), appnum: 0, value_max: VALUE_MAX, finalized: false, spawned: false }
    }

    fn handshake(connection: Connection, rank: u32, size: u32) -> Result<PmiClient, BootstrapError> {
        if size == 0 || rank >= size {
            return Err(failure("init", format!("rank {rank} does not fit a job of {size} ranks")));
        }
        let mut client = PmiClient { rank, size, ..PmiClient::unconnected(connection) };
        let init = client.call("init", Message::new("init").with("pmi_version", 1).with("pmi_subversion", 1), "response_to_init")?;
        if init.get("pmi_version") != Some("1") {
            return Err(failure("init", format!("the launcher speaks PMI version {:?}, not 1", init.get("pmi_version"))));
        }
        let maxes = client.call("init", Message::new("get_maxes"), "maxes")?;
        if let Some(value_max) = maxes.get("vallen_max").and_then(|text| text.parse::<usize>().ok()) {
            client.value_max = value_max.min(VALUE_MAX);
        }
        let kvsname = client.call("init", Message::new("get_my_kvsname"), "my_kvsname")?;
        client.kvsname = required(&kvsname, "init", "kvsname")?.to_string();
        let appnum = client.call("init", Message::new("get_appnum"), "appnum")?;
        client.appnum = required(&appnum, "init", "appnum")?.parse().unwrap_or(0);
        Ok(client)
    }

    /// Largest value a put may carry, as the launcher announced (at most 1024).
    pub fn value_max(&self) -> usize {
        self.value_max
    }

    fn send(&mut self, operation: &'static str, message: &Message) -> Result<(), BootstrapError> {
        let line = message.to_line().map_err(|error| failure(operation, error.to_string()))?;
        self.connection.write_all(line.as_bytes()).map_err(|error| failure(operation, format!("cannot write to the launcher: {error}")))
    }

    fn receive(&mut self, operation: &'static str) -> Result<Message, BootstrapError> {
        let mut buffer = [0u8; 4096];
        loop {
            if let Some(line) = self.lines.next_line().map_err(|error| failure(operation, error.to_string()))? {
                return Message::parse(&line).map_err(|error| failure(operation, error.to_string()));
            }
            let read = match self.connection.read(&mut buffer) {
                Ok(read) => read,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(failure(operation, format!("cannot read from the launcher: {error}"))),
            };
            if read == 0 {
                return Err(failure(operation, "the launcher closed the PMI connection".to_string()));
            }
            self.lines.extend(&buffer[..read]);
        }
    }

    fn expect(&mut self, operation: &'static str, reply: &str) -> Result<Message, BootstrapError> {
        let message = self.receive(operation)?;
        if message.command() != reply {
            return Err(failure(operation, format!("expected cmd={reply} from the launcher, got cmd={}", message.command())));
        }
        Ok(message)
    }

    /// Sends `request` and waits for `reply`, failing when the reply carries `rc` other than 0.
    fn call(&mut self, operation: &'static str, request: Message, reply: &str) -> Result<Message, BootstrapError> {
        self.send(operation, &request)?;
        let message = self.expect(operation, reply)?;
        match message.get("rc") {
            None | Some("0") => Ok(message),
            Some(rc) => Err(failure(operation, format!("the launcher answered rc={rc}: {}", message.get("msg").unwrap_or("no reason given")))),
        }
    }

    fn check_key_and_value(&self, key: &str, value: Option<&str>) -> Result<(), BootstrapError> {
        check_word("key", key).map_err(|error| failure("put", error.to_string()))?;
        if key.len() > KEY_MAX {
            return Err(failure("put", format!("key {key:?} is longer than {KEY_MAX} bytes")));
        }
        if let Some(value) = value {
            if value.is_empty() || value.contains([' ', '\n', '\r']) {
                return Err(failure("put", format!("value for {key:?} must be non-empty, without spaces or newlines")));
            }
            if value.len() > self.value_max {
                return Err(failure("put", format!("value for {key:?} is {} bytes; the launcher takes at most {}", value.len(), self.value_max)));
            }
        }
        Ok(())
    }
}

impl Bootstrap for PmiClient {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn job_id(&self) -> &str {
        &self.kvsname
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.check_key_and_value(key, Some(value))?;
        let request = Message::new("put").with("kvsname", &self.kvsname).with("key", key).with("value", value);
        self.call("put", request, "put_result").map(drop)
    }

    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        self.check_key_and_value(key, None)?;
        let request = Message::new("get").with("kvsname", &self.kvsname).with("key", key);
        let reply = self.call("get", request, "get_result")?;
        Ok(required(&reply, "get", "value")?.to_string())
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.call("fence", Message::new("barrier_in"), "barrier_out").map(drop)
    }

    fn spawned(&self) -> bool {
        self.spawned
    }

    fn appnum(&self) -> i32 {
        self.appnum
    }

    /// How many ranks the job may grow to; `None` when the launcher does not say (Hydra: -1).
    fn universe_size(&mut self) -> Result<Option<u32>, BootstrapError> {
        let reply = self.call("universe_size", Message::new("get_universe_size"), "universe_size")?;
        Ok(required(&reply, "universe_size", "size")?.parse::<u32>().ok())
    }

    fn publish_name(&mut self, service: &str, port: &str) -> Result<(), BootstrapError> {
        check_word("service", service).map_err(|error| failure("publish_name", error.to_string()))?;
        check_word("port", port).map_err(|error| failure("publish_name", error.to_string()))?;
        self.call("publish_name", Message::new("publish_name").with("service", service).with("port", port), "publish_result").map(drop)
    }

    fn unpublish_name(&mut self, service: &str) -> Result<(), BootstrapError> {
        check_word("service", service).map_err(|error| failure("unpublish_name", error.to_string()))?;
        self.call("unpublish_name", Message::new("unpublish_name").with("service", service), "unpublish_result").map(drop)
    }

    fn lookup_name(&mut self, service: &str) -> Result<String, BootstrapError> {
        check_word("service", service).map_err(|error| failure("lookup_name", error.to_string()))?;
        let reply = self.call("lookup_name", Message::new("lookup_name").with("service", service), "lookup_result")?;
        Ok(required(&reply, "lookup_name", "port")?.to_string())
    }

    fn spawn(&mut self, request: &SpawnRequest) -> Result<(), BootstrapError> {
        let blocks = request.to_blocks().map_err(|error| failure("spawn", error.to_string()))?;
        for block in blocks {
            self.connection.write_all(block.as_bytes()).map_err(|error| failure("spawn", format!("cannot write to the launcher: {error}")))?;
        }
        let reply = self.expect("spawn", "spawn_result")?;
        match reply.get("rc") {
            None | Some("0") => Ok(()),
            Some(rc) => Err(failure("spawn", format!("the launcher could not start the processes (rc={rc}): {}", reply.get("msg").unwrap_or("no reason given")))),
        }
    }

    fn finalize(&mut self) -> Result<(), BootstrapError> {
        if self.finalized {
            return Ok(());
        }
        self.call("finalize", Message::new("finalize"), "finalize_ack")?;
        self.finalized = true;
        Ok(())
    }

    /// Tells the launcher; it then ends every rank. Returns once the request is sent: the caller
    /// should exit with `code` in case the launcher is slow to act.
    fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError> {
        // The message travels as the last, free-form value: only newlines and '=' would confuse it.
        let printable: String = message
            .chars()
            .map(|c| {
                if c == '\n' || c == '\r' {
                    ' '
                } else if c == '=' {
                    ':'
                } else {
                    c
                }
            })
            .collect();
        let mut request = Message::new("abort").with("exitcode", code);
        if !printable.trim().is_empty() {
            request = request.with("error_msg", printable.trim());
        }
        self.send("abort", &request)
    }
}

/// The bootstrap of a program started without a launcher: a job of one rank.
pub struct Singleton {
    job_id: String,
    values: HashMap<String, String>,
}

impl Singleton {
    /// A job of one, named `single_<pid>_<nanoseconds>` so concurrent singletons never share
    /// shared-memory names.
    pub fn new() -> Singleton {
        let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_nanos());
        Singleton { job_id: format!("single_{}_{nanos}", std::process::id()), values: HashMap::new() }
    }
}

impl Default for Singleton {
    fn default() -> Self {
        Singleton::new()
    }
}

impl Bootstrap for Singleton {
    fn rank(&self) -> u32 {
        0
    }

    fn size(&self) -> u32 {
        1
    }

    fn job_id(&self) -> &str {
        &self.job_id
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.values.insert(key.to_string(), value.to_string());
        Ok(())
    }

    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        self.values.get(key).cloned().ok_or_else(|| failure("get", format!("no value for key {key}")))
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        Ok(())
    }

    fn finalize(&mut self) -> Result<(), BootstrapError> {
        Ok(())
    }

    /// There is no launcher to tell: the caller ends the process with `code`.
    fn abort(&mut self, _code: i32, _message: &str) -> Result<(), BootstrapError> {
        Ok(())
    }
}

/// The launcher's bootstrap when this process has one (PMI-1 where the launcher hands out a PMI
/// socket or port, else PMIx where it names a PMIx server), else a [`Singleton`].
pub fn from_env_or_singleton() -> Result<Box<dyn Bootstrap>, BootstrapError> {
    if let Some(client) = PmiClient::from_env()? {
        return Ok(Box::new(client));
    }
    Ok(match crate::pmix::PmixBootstrap::from_lookup(|name| std::env::var(name).ok())? {
        Some(client) => Box::new(client),
        None => Box::new(Singleton::new()),
    })
}

fn failure(operation: &'static str, reason: String) -> BootstrapError {
    BootstrapError { operation, reason }
}

fn missing(variable: &str) -> BootstrapError {
    failure("connect", format!("{variable} is not set, but the launcher set PMI_FD or PMI_PORT"))
}

fn parse_env<T: std::str::FromStr>(variable: &str, text: &str) -> Result<T, BootstrapError> {
    text.trim().parse().map_err(|_| failure("connect", format!("{variable}={text:?} is not a number")))
}

fn required<'a>(message: &'a Message, operation: &'static str, key: &str) -> Result<&'a str, BootstrapError> {
    message.require(key).map_err(|error| failure(operation, error.to_string()))
}
