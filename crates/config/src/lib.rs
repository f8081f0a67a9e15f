//! Every Braid setting, with its default, and the only place where environment variables are read.
//!
//! Lower layers never call `std::env`: they receive the values they need from a [`Config`].
//! `braid config` (and docs/settings.md) print [`SETTINGS`], so the list cannot drift from the code.

use std::fmt;

/// How a rank waits for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// Spin for `spin_count` polls, then block on the futex doorbell; when the node's ranks
    /// outnumber the cores the job may use, yield the core for `yield_us`, then block.
    Auto,
    /// Always poll (lowest latency when every rank has its own core).
    Poll,
    /// Always block on the doorbell after one unsuccessful poll.
    Block,
}

/// Whether collectives on communicators that span nodes run in their hierarchical forms (a phase
/// within each node, one among the nodes, one within each node again).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HierarchyMode {
    /// Where the cost model, fed by the links' profiles, predicts the hierarchical form is faster.
    Auto,
    /// Never: the flat algorithms only.
    Off,
    /// Always where the communicator's layout allows one (to measure it, or the model); a
    /// reduction takes the cheaper of its hierarchical forms by the cost model.
    Always,
    /// As `Always`, and a blocking commutative allreduce always through the node-wide shared
    /// segment (to measure that form against the others).
    Segment,
}

/// Whether large intra-node messages may use cross-memory attach (`process_vm_readv`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmaMode {
    /// Use CMA; fall back to the pipelined two-copy path if the kernel refuses (EPERM).
    Auto,
    /// Never use CMA: always the pipelined two-copy path through the shared buffer pool.
    Off,
}

/// Which network interfaces carry inter-node traffic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rails {
    /// Every interface that is up, has an IPv4 address and is not loopback.
    Auto,
    /// No network rails: ranks on other nodes are unreachable.
    None,
    /// These interfaces, in this order.
    Named(Vec<String>),
}

/// The multirail strategy: how a message is spread over the rails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategyKind {
    /// Everything on the fastest rail.
    Single,
    /// Whole messages to whichever rail is idle first.
    Greedy,
    /// Equal split over all rails.
    Iso,
    /// Split by each rail's large-message bandwidth, ignoring load.
    Weighted,
    /// Predicted-time split: rails that help, chunks ending together, busy rails accounted for.
    Hetero,
}

/// Whether chunk submission may be handed to threads on idle cores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffloadMode {
    /// Offload when the measured cost pays and the node is not oversubscribed.
    Auto,
    Off,
}

/// All settings of one process.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub wait: WaitMode,
    pub spin_count: u32,
    pub yield_us: u32,
    pub rail_spin_us: u32,
    pub rail_reply_spin_us: u32,
    pub block_timeout_ms: u32,
    pub peer_check_ms: u32,
    pub shm_ring_cells: usize,
    pub shm_inline_max: usize,
    pub shm_pool_buffers: usize,
    pub shm_pool_buffer_size: usize,
    pub shm_handover_min: usize,
    pub shm_handover_chunk: usize,
    /// BRAID_EAGER_MAX: the largest message sent eagerly to any peer. A direct transport's eager
    /// limit is this, or less if one frame cannot carry it; the network rails' is where their
    /// profiles say a rendezvous split starts to pay, capped by this.
    pub eager_max: usize,
    pub cma: CmaMode,
    pub win_create_share: bool,
    /// BRAID_COPY_ASSIST: large one-sided copies on a node are shared with a helper thread on an
    /// idle CPU.
    pub copy_assist: bool,
    pub copy_assist_min: usize,
    pub copy_assist_spin_us: u32,
    pub cma_chunk: usize,
    pub cma_share_min: usize,
    pub cma_share_max: usize,
    /// BRAID_SHM_PIPELINE_MAX: rendezvous messages up to this size stream through the pool
    /// rather than being read by single copy.
    pub shm_pipeline_max: usize,
    pub coll_bcast_split_min: usize,
    pub coll_bcast_flat_max: usize,
    /// Bytes of each rank's slot in the node flag segment (0: the flag forms are off).
    pub coll_shm_slot: usize,
    /// Most bytes per rank the flag forms take, broadcasts aside (which take a whole slot).
    pub coll_shm_max: usize,
    /// Largest blocking allreduce two ranks of one node, a CPU each, exchange as messages.
    pub coll_pair_exchange_max: usize,
    /// BRAID_UNEXPECTED_MARK: the unexpected-queue length of the first growth event (0: none).
    pub unexpected_mark: usize,
    pub coll_allreduce_split_min: usize,
    pub coll_allreduce_exchange_max: usize,
    pub coll_alltoall_batch: usize,
    pub coll_hierarchy: HierarchyMode,
    pub progress_thread: bool,
    pub shm: bool,
    pub rails: Rails,
    pub strategy: StrategyKind,
    pub profile_dir: String,
    pub sample_ms: u32,
    pub split_min: usize,
    pub rail_timeout_ms: usize,
    pub rail_keepalive_s: u32,
    /// BRAID_RAIL_CONGESTION: the TCP congestion control of the rail connections (`None`: the
    /// system's default).
    pub rail_congestion: Option<String>,
    /// BRAID_RAIL_DELAY_FRESH_MS: how recent a rail connection's data must be for its round trips to count.
    pub rail_delay_fresh_ms: u32,
    pub rail_receive_block: usize,
    pub rate_smoothing: f64,
    pub rail_queue_us: usize,
    pub rail_refill: f64,
    pub rail_hedge: bool,
    pub offload: OffloadMode,
    pub offload_cost_ns: Option<u64>,
    pub unfinalized_wait_s: u32,
    /// BRAID_CONNECT_TIMEOUT_S: how long MPI_Comm_connect (and a spawn) waits for the other side.
    pub connect_timeout_s: u32,
    pub debug: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            wait: WaitMode::Auto,
            spin_count: 20_000,
            yield_us: 200,
            rail_spin_us: 20,
            rail_reply_spin_us: 200,
            block_timeout_ms: 200,
            peer_check_ms: 250,
            shm_ring_cells: 512,
            shm_inline_max: 128,
            shm_pool_buffers: 32,
            shm_pool_buffer_size: 64 * 1024,
            shm_handover_min: 8 * 1024,
            shm_handover_chunk: 4 * 1024,
            eager_max: 32 * 1024,
            cma: CmaMode::Auto,
            win_create_share: true,
            copy_assist: true,
            copy_assist_min: 65536,
            copy_assist_spin_us: 100,
            cma_chunk: 1024 * 1024,
            cma_share_min: 64 * 1024,
            cma_share_max: 8 * 1024 * 1024,
            shm_pipeline_max: 64 * 1024,
            coll_bcast_split_min: 256 * 1024,
            coll_bcast_flat_max: 4096,
            coll_shm_slot: 65536,
            coll_shm_max: 16384,
            coll_pair_exchange_max: 0,
            unexpected_mark: 1024,
            coll_allreduce_split_min: 16 * 1024,
            coll_allreduce_exchange_max: 1024,
            coll_alltoall_batch: 32,
            coll_hierarchy: HierarchyMode::Auto,
            progress_thread: false,
            shm: true,
            rails: Rails::Auto,
            strategy: StrategyKind::Hetero,
            profile_dir: "/var/tmp/braid/profiles".to_string(),
            sample_ms: 500,
            split_min: 16 * 1024,
            rail_timeout_ms: 2000,
            rail_keepalive_s: 1,
            rail_congestion: None,
            rail_delay_fresh_ms: 100,
            rail_receive_block: 1024 * 1024,
            rate_smoothing: 0.25,
            rail_queue_us: 5000,
            rail_refill: 0.5,
            rail_hedge: true,
            offload: OffloadMode::Auto,
            offload_cost_ns: None,
            unfinalized_wait_s: 10,
            connect_timeout_s: 60,
            debug: false,
        }
    }
}

/// One documented setting: its environment variable, default and meaning.
pub struct Setting {
    pub variable: &'static str,
    pub default: &'static str,
    pub meaning: &'static str,
}

/// Every environment variable Braid reads, in the order docs/settings.md lists them.
pub const SETTINGS: &[Setting] = &[
    Setting { variable: "BRAID_WAIT", default: "auto", meaning: "auto | poll | block: how a rank waits for messages (auto spins, then blocks on a futex doorbell; on an oversubscribed node it yields its core for BRAID_YIELD_US, then blocks)" },
    Setting { variable: "BRAID_SPIN_COUNT", default: "20000", meaning: "polls of all channels before a waiting rank blocks (auto mode)" },
    Setting { variable: "BRAID_YIELD_US", default: "200", meaning: "oversubscribed node (auto mode): microseconds a waiting rank yields its core (sched_yield) before it blocks on the doorbell; 0 blocks at once" },
    Setting { variable: "BRAID_RAIL_SPIN_US", default: "20", meaning: "auto mode, a rank with network peers: microseconds it polls (at most BRAID_SPIN_COUNT times) before it sleeps on the rails' doorbells. A rails poll costs a system call per rail, so this is short: a streaming rank is seldom idle for long, and its spinning takes the CPU that the kernel's packet work needs; 0 sleeps after one empty poll" },
    Setting { variable: "BRAID_RAIL_REPLY_SPIN_US", default: "200", meaning: "auto mode, a rank with network peers that has sent a message or protocol frame over the rails: it stays awake until this many microseconds after that frame before it sleeps, polling and, after BRAID_RAIL_SPIN_US, yielding its core between polls (to the peer that answers, if that runs there), unless the frame's socket is full. The answer to a request comes about a round trip later, and waking a sleeping rank on a CPU busy with packet work can cost more than that; while a rendezvous moves, or without a recent send, BRAID_RAIL_SPIN_US applies; 0 turns it off" },
    Setting { variable: "BRAID_BLOCK_TIMEOUT_MS", default: "200", meaning: "longest single futex sleep; a sleeping rank re-checks its channels at least this often" },
    Setting { variable: "BRAID_PEER_CHECK_MS", default: "250", meaning: "a rank blocked in a wait checks this often whether the processes of the other ranks of its node, and the process that started it (its launcher), still run; one found ended on two checks in a row (the launcher has not ended the job meanwhile) fails the wait, naming the rank or the launcher, so that a job whose launcher does not watch its ranks (srun --mpi=pmi2) still ends and ranks do not outlive a killed launcher; 0 turns it off" },
    Setting { variable: "BRAID_SHM_RING_CELLS", default: "512", meaning: "64-byte cells in each per-pair ring (power of two)" },
    Setting { variable: "BRAID_SHM_INLINE_MAX", default: "128", meaning: "largest message (header included) copied through the ring cells; larger eager messages use the buffer pool" },
    Setting { variable: "BRAID_SHM_POOL_BUFFERS", default: "32", meaning: "buffers in each rank's shared send pool" },
    Setting { variable: "BRAID_SHM_POOL_BUFFER_SIZE", default: "65536", meaning: "bytes per pool buffer; also the chunk of the two-copy pipeline" },
    Setting { variable: "BRAID_SHM_HANDOVER_MIN", default: "8192", meaning: "smallest pooled payload handed to the receiver while the sender still copies it in, so that the receiver's copy out runs alongside; larger than BRAID_SHM_POOL_BUFFER_SIZE: never" },
    Setting { variable: "BRAID_SHM_HANDOVER_CHUNK", default: "4096", meaning: "bytes the sender copies between two publications of its progress in a handed-over payload (at least 64)" },
    Setting { variable: "BRAID_EAGER_MAX", default: "32768", meaning: "largest message sent eagerly; larger ones use rendezvous (CMA single copy, two-copy pipeline, or a split over the network rails). Shared memory: this, or less if a frame cannot carry it. Network rails: where their profiles say a split starts to pay, capped by this" },
    Setting { variable: "BRAID_CMA", default: "auto", meaning: "auto | off: single-copy large messages and MPI_Win_create windows on a node with process_vm_readv/writev (auto falls back on EPERM)" },
    Setting { variable: "BRAID_WIN_CREATE_SHARE", default: "on", meaning: "on | off: on one node, MPI_Win_create windows over private anonymous memory (heap or mmap; whole pages, or any span in a process with one thread) have it moved under a shared-memory file in place, so that the node's ranks reach it by loads and stores as in allocated windows; off: single copies (BRAID_CMA) or messages" },
    Setting { variable: "BRAID_COPY_ASSIST", default: "on", meaning: "on | off: a put or get of at least BRAID_COPY_ASSIST_MIN bytes on a window the ranks of a node reach by loads and stores is copied half by the calling rank and half by a helper thread, on a CPU that no running rank needs: a spare one, or the target's while it sleeps in a blocking call (never on an oversubscribed node); the caller finishes alone what the helper does not start in time" },
    Setting { variable: "BRAID_COPY_ASSIST_MIN", default: "65536", meaning: "smallest one-sided copy (bytes) shared with the helper thread (see BRAID_COPY_ASSIST; at least 4096); below about 32 KiB one core's copy measured faster" },
    Setting { variable: "BRAID_COPY_ASSIST_SPIN_US", default: "100", meaning: "microseconds the copy helper watches for the next copy before it sleeps (a sleeping helper is woken by the next copy, too late to help with that one)" },
    Setting { variable: "BRAID_CMA_CHUNK", default: "1048576", meaning: "bytes per process_vm_readv call of the single-copy pipeline" },
    Setting { variable: "BRAID_CMA_SHARE_MIN", default: "65536", meaning: "smallest single-copy message whose copy the receiver shares with the waiting sender: it reads the first half (process_vm_readv) while the sender writes the second (process_vm_writev), so two cores copy; from the second large message to a peer on (the first confirms that CMA works); 0: the receiver copies alone" },
    Setting { variable: "BRAID_CMA_SHARE_MAX", default: "8388608", meaning: "largest message whose copy is shared (see BRAID_CMA_SHARE_MIN); above it two concurrent copies measured slower on this machine than one" },
    Setting { variable: "BRAID_SHM_PIPELINE_MAX", default: "65536", meaning: "largest rendezvous message on a node streamed through the pool buffers (two copies, the receiver's alongside the sender's) instead of read by single copy: at 64 KiB, one pool buffer, the stream measured 4.2 us ping-pong and 25 GB/s against single copy's 6.3 us and 11 GB/s (and halved a 2-rank 64 KiB allgather); from 96 KiB on, single copy is 2-3x faster; 0: every rendezvous by single copy" },
    Setting { variable: "BRAID_COLL_BCAST_SPLIT_MIN", default: "262144", meaning: "smallest broadcast (bytes) on a communicator that spans nodes sent as scatter + ring allgather instead of a binomial tree (within one node the tree's single-copy messages are faster: 1 MiB at 2 ranks 47-52 against 102-108 us, 8 ranks 372-493 against 636-978 us); must be equal on every rank" },
    Setting { variable: "BRAID_COLL_BCAST_FLAT_MAX", default: "4096", meaning: "largest broadcast on a communicator within one node, in bytes times the ranks it goes to, that the root sends to every rank itself instead of along a binomial tree: no rank waits for another to forward, which counts when ranks share cores (4 ranks on 2 cores: 2.1 against 3.5 us at 8 B, 2.4 against 3.9 us at 1 KiB; alike at 8 ranks and at 64 KiB); 0: always the tree; must be equal on every rank" },
    Setting { variable: "BRAID_COLL_SHM_SLOT", default: "65536", meaning: "bytes of each rank's slot in the node flag segment of a communicator whose ranks all share one node; where the ranks outnumber the cores, a blocking broadcast of at most this many bytes passes through the root's slot (the leaves copy it out, meeting on cache-line flags) instead of as messages (4 ranks on 2 cores, 64 KiB: 9-12 against 18-31 us); the segment takes 2 x ranks x this; 0 turns every flag form off; must be equal on every rank" },
    Setting { variable: "BRAID_COLL_SHM_MAX", default: "16384", meaning: "most bytes per rank (a rank's whole send or receive vector; n blocks for alltoall and the root of scatter) that the other blocking collectives on one node pass through the flag segment's slots (at most BRAID_COLL_SHM_SLOT): barrier, reduce, allreduce, allgather, gather, scatter, alltoall, scan, exscan, reduce_scatter; above it they pass messages, whose copies in and out overlap (at 2 ranks, 32 KiB allgather 3.8 against 7.4 us); larger values force the flag forms on larger collectives; must be equal on every rank" },
    Setting { variable: "BRAID_COLL_PAIR_EXCHANGE_MAX", default: "0", meaning: "largest blocking allreduce (bytes) on a communicator of two ranks on one node, each with a CPU of its own, that the two do as one message each way instead of through the flag segment; 0: always the flag form, which runs straight on the segment in a blocking call and wins at every size it takes (at 2 ranks bound, OSU: 8 B 0.19-0.24 against 0.37 us as messages, 1 KiB 0.37-0.39 against 0.46-0.47, 8 KiB 1.6-2.2 against 2.1); where ranks share cores the flag form stays whatever this says; must be equal on every rank" },
    Setting { variable: "BRAID_COLL_ALLREDUCE_SPLIT_MIN", default: "16384", meaning: "smallest commutative allreduce (bytes) done as reduce-scatter + allgather instead of recursive doubling; must be equal on every rank" },
    Setting { variable: "BRAID_COLL_ALLREDUCE_EXCHANGE_MAX", default: "1024", meaning: "largest allreduce, in bytes times ranks, done (in groups of 3 to 8 ranks) as one all-to-all exchange of the inputs instead of log2 n dependent rounds; must be equal on every rank" },
    Setting { variable: "BRAID_COLL_ALLTOALL_BATCH", default: "32", meaning: "peers a rank exchanges blocks with at once in a flat alltoall or alltoallv (sends and receives posted together, then the next batch); 1 is the pairwise exchange in n - 1 dependent rounds. A batch lets a rank move its other blocks while one partner is late (descheduled, or still computing) instead of waiting for it; a bounded one keeps a large communicator from flooding every peer at once; must be equal on every rank" },
    Setting { variable: "BRAID_COLL_HIERARCHY", default: "auto", meaning: "auto | off | always | segment: the collectives on a communicator whose ranks span nodes, with several on some node, run within each node, among one rank per node, then within each node again (a large blocking commutative allreduce may do its node phases in a node-wide shared segment whose ranks reduce disjoint slices in parallel): auto where the cost model (the shared-memory and rail profiles applied to each form's rounds on the communicator's layout) predicts it is faster; always: the hierarchical forms, the cheaper one for an allreduce; segment: as always, every blocking commutative allreduce through the shared segment (to measure it); must be equal on every rank" },
    Setting { variable: "BRAID_PROGRESS_THREAD", default: "off", meaning: "on | off: on starts a thread per rank that advances non-blocking collectives while the application computes outside MPI (worth it where a rank has an idle core; every MPI call then takes a lock)" },
    Setting { variable: "BRAID_SHM", default: "on", meaning: "on | off: off sends all traffic between ranks of one node through the network rails (\"virtual node mode\")" },
    Setting { variable: "BRAID_RAILS", default: "auto", meaning: "auto | none | comma-separated interface names: the network rails for inter-node traffic (auto: every up, non-loopback IPv4 interface)" },
    Setting { variable: "BRAID_STRATEGY", default: "hetero", meaning: "single | greedy | iso | weighted | hetero: how messages are spread over the rails" },
    Setting { variable: "BRAID_PROFILE_DIR", default: "/var/tmp/braid/profiles", meaning: "where sampled rail profiles are cached, one file per rail identity" },
    Setting { variable: "BRAID_SAMPLE_MS", default: "500", meaning: "time budget of the start-up sample of a rail that has no cached profile" },
    Setting { variable: "BRAID_SPLIT_MIN", default: "16384", meaning: "smallest chunk (bytes) worth putting on an additional rail" },
    Setting { variable: "BRAID_RAIL_TIMEOUT_MS", default: "2000", meaning: "a rail whose sent bytes stay unacknowledged this long is failed over (TCP_USER_TIMEOUT)" },
    Setting { variable: "BRAID_RAIL_KEEPALIVE_S", default: "1", meaning: "seconds without traffic after which an idle rail connection is probed (TCP keepalive), so that a link lost while nothing moves is failed over within this plus BRAID_RAIL_TIMEOUT_MS, and a receive from a peer no rail reaches any more fails instead of waiting forever; 0: no probes" },
    Setting { variable: "BRAID_RAIL_CONGESTION", default: "system", meaning: "system | a TCP congestion control the kernel offers (cubic, bbr, reno, dctcp, ... as in /proc/sys/net/ipv4/tcp_available_congestion_control): the algorithm of the rail connections; system: the kernel's default (net.ipv4.tcp_congestion_control). One the kernel does not offer, or (without CAP_NET_ADMIN) does not allow, fails the rail's wire-up with the list it offers" },
    Setting { variable: "BRAID_RAIL_DELAY_FRESH_MS", default: "100", meaning: "hetero: a rail connection that sent data within this many milliseconds reports the queue its path holds for other traffic (its smoothed round trip less its least one), and a peer's control and eager frames avoid a rail whose queue makes them arrive later; older round trips count as no queue, so a rail left for this long is tried again; 0: round trips are not read" },
    Setting { variable: "BRAID_RAIL_RECEIVE_BLOCK", default: "1048576", meaning: "most bytes one read takes from a rail connection: a connection whose reads fill its receive buffer (a stream) has the buffer doubled up to this size, so it is read in large blocks and a frame cut by the buffer's end is moved to its front once per block, not once per frame; others keep 64 KiB (at least 65536)" },
    Setting { variable: "BRAID_RATE_SMOOTHING", default: "0.25", meaning: "weight of the newest drain-rate observation in a rail's online rate correction (0..1)" },
    Setting { variable: "BRAID_RAIL_QUEUE_US", default: "5000", meaning: "hetero: most predicted drain time (microseconds) of chunk bytes handed to one rail at a time (while one transfer is alone in flight, at most half its predicted time); the rest of a split waits in Braid and is taken over by a rail that drains sooner than predicted (raised to twice the longest recent gap between two progress steps, at most 50 ms; with several transfers in flight, then at most a third of their combined predicted time, so that the queues shrink as a stream ends; 0: hand every chunk over at once, no rebalancing)" },
    Setting { variable: "BRAID_RAIL_REFILL", default: "0.5", meaning: "hetero: share of a rail's queue cap (BRAID_RAIL_QUEUE_US) that must be free before a sleeping sender wakes to top the rail up with that room, in frames of 64-256 KiB; larger: fewer wake-ups, frames and system calls per byte, less queued ahead of the wake-up; a number greater than 0 and at most 1" },
    Setting { variable: "BRAID_RAIL_HEDGE", default: "on", meaning: "on | off: hetero: once every byte of the transfers to a peer is posted, a rail that runs dry sends again the undelivered end of a slower rail's chunk, the oldest transfer's first (the receiver keeps the first copy)" },
    Setting { variable: "BRAID_OFFLOAD", default: "auto", meaning: "auto | off: submit chunks from threads on idle cores when the measured offload cost pays (never when oversubscribed)" },
    Setting { variable: "BRAID_OFFLOAD_COST_US", default: "measured", meaning: "offload cost T_O in microseconds (Brunet, Trahay and Denis 2008, equation 1); unset: measured at start-up" },
    Setting { variable: "BRAID_UNFINALIZED_WAIT_S", default: "10", meaning: "braid run: seconds the other ranks get to end on their own after a rank exits with code 0 without calling MPI_Finalize (some programs skip it at their very end), with a warning; ranks still running then are stopped and the job fails. 0: fail at once" },
    Setting { variable: "BRAID_CONNECT_TIMEOUT_S", default: "60", meaning: "seconds MPI_Comm_connect waits for the port's owner to accept, and the processes of two jobs being connected (connect/accept, spawn, join) wait for each other, before the call fails with MPI_ERR_PORT" },
    Setting { variable: "BRAID_UNEXPECTED_MARK", default: "1024", meaning: "length of a rank's unexpected-message queue at which the MPI_T event braid_unexpected_queue_growth first fires, then again at each doubling (2048, 4096, ...; again from the start once the queue has drained below it); 0: never" },
    Setting { variable: "BRAID_DEBUG", default: "0", meaning: "1: print wire-up and protocol decisions on stderr, each line stamped with the rank's wall clock (`braid: rank R [SECONDS]: ...`)" },
];

/// The settings as the Markdown page docs/settings.md (`braid config --markdown` prints it).
pub fn settings_markdown() -> String {
    let mut page = String::from(
        "# Settings\n\nEvery setting is an environment variable read once, at MPI_Init, by `braid-config` \
         (the only code that reads the environment). `braid config` prints this table and checks the \
         current environment. Generated from `braid_config::SETTINGS`: edit the code, then run \
         `braid config --markdown > docs/settings.md`.\n\n| variable | default | meaning |\n|---|---|---|\n",
    );
    for setting in SETTINGS {
        page.push_str(&format!("| `{}` | `{}` | {} |\n", setting.variable, setting.default, setting.meaning.replace('|', "\\|")));
    }
    page.push_str(
        "\nThe compiler wrappers read `BRAID_CC` / `BRAID_CXX` (the real compiler, default `cc` / `c++`) and \
         `BRAID_LIBDIR` (where `libbraid.so` is, default `target/release` of the checkout). The launcher \
         hands each rank the PMI-1 variables `PMI_FD`, `PMI_RANK`, `PMI_SIZE` (or `PMI_PORT`, `PMI_ID` under \
         other launchers).\n",
    );
    page
}

/// A setting whose value could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub variable: &'static str,
    pub value: String,
    /// The values the setting accepts, as a phrase: "one of auto, poll, block", "an integer >= 8 ...".
    pub expected: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={:?} is not valid: expected {}", self.variable, self.value, self.expected)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// Builds a configuration from any name -> value lookup (tests pass a map).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut config = Config::default();
        let mut reader = Reader { lookup: &lookup };
        config.wait = reader.choice("BRAID_WAIT", config.wait, &[("auto", WaitMode::Auto), ("poll", WaitMode::Poll), ("block", WaitMode::Block)])?;
        config.spin_count = reader.number_u32("BRAID_SPIN_COUNT", config.spin_count, 0)?;
        config.yield_us = reader.number_u32("BRAID_YIELD_US", config.yield_us, 0)?;
        config.rail_spin_us = reader.number_u32("BRAID_RAIL_SPIN_US", config.rail_spin_us, 0)?;
        config.rail_reply_spin_us = reader.number_u32("BRAID_RAIL_REPLY_SPIN_US", config.rail_reply_spin_us, 0)?;
        config.block_timeout_ms = reader.number_u32("BRAID_BLOCK_TIMEOUT_MS", config.block_timeout_ms, 1)?;
        config.peer_check_ms = reader.number_u32("BRAID_PEER_CHECK_MS", config.peer_check_ms, 0)?;
        config.shm_ring_cells = reader.power_of_two("BRAID_SHM_RING_CELLS", config.shm_ring_cells, 8)?;
        config.shm_inline_max = reader.number("BRAID_SHM_INLINE_MAX", config.shm_inline_max, 64)?;
        config.shm_pool_buffers = reader.number("BRAID_SHM_POOL_BUFFERS", config.shm_pool_buffers, 2)?;
        config.shm_pool_buffer_size = reader.number("BRAID_SHM_POOL_BUFFER_SIZE", config.shm_pool_buffer_size, 4096)?;
        config.shm_handover_min = reader.number("BRAID_SHM_HANDOVER_MIN", config.shm_handover_min, 0)?;
        config.shm_handover_chunk = reader.number("BRAID_SHM_HANDOVER_CHUNK", config.shm_handover_chunk, 64)?;
        config.eager_max = reader.number("BRAID_EAGER_MAX", config.eager_max, 0)?;
        config.cma = reader.choice("BRAID_CMA", config.cma, &[("auto", CmaMode::Auto), ("on", CmaMode::Auto), ("off", CmaMode::Off)])?;
        config.win_create_share = reader.choice("BRAID_WIN_CREATE_SHARE", config.win_create_share, &[("on", true), ("off", false), ("auto", true)])?;
        config.copy_assist = reader.choice("BRAID_COPY_ASSIST", config.copy_assist, &[("on", true), ("off", false), ("auto", true)])?;
        config.copy_assist_min = reader.number("BRAID_COPY_ASSIST_MIN", config.copy_assist_min, 4096)?;
        config.copy_assist_spin_us = reader.number_u32("BRAID_COPY_ASSIST_SPIN_US", config.copy_assist_spin_us, 0)?;
        config.cma_chunk = reader.number("BRAID_CMA_CHUNK", config.cma_chunk, 4096)?;
        config.cma_share_min = reader.number("BRAID_CMA_SHARE_MIN", config.cma_share_min, 0)?;
        config.cma_share_max = reader.number("BRAID_CMA_SHARE_MAX", config.cma_share_max, 0)?;
        config.shm_pipeline_max = reader.number("BRAID_SHM_PIPELINE_MAX", config.shm_pipeline_max, 0)?;
        config.coll_bcast_split_min = reader.number("BRAID_COLL_BCAST_SPLIT_MIN", config.coll_bcast_split_min, 0)?;
        config.coll_bcast_flat_max = reader.number("BRAID_COLL_BCAST_FLAT_MAX", config.coll_bcast_flat_max, 0)?;
        config.coll_shm_slot = reader.number("BRAID_COLL_SHM_SLOT", config.coll_shm_slot, 0)?;
        config.coll_shm_max = reader.number("BRAID_COLL_SHM_MAX", config.coll_shm_max, 0)?;
        config.coll_pair_exchange_max = reader.number("BRAID_COLL_PAIR_EXCHANGE_MAX", config.coll_pair_exchange_max, 0)?;
        config.coll_allreduce_split_min = reader.number("BRAID_COLL_ALLREDUCE_SPLIT_MIN", config.coll_allreduce_split_min, 0)?;
        config.coll_allreduce_exchange_max = reader.number("BRAID_COLL_ALLREDUCE_EXCHANGE_MAX", config.coll_allreduce_exchange_max, 0)?;
        config.coll_alltoall_batch = reader.number("BRAID_COLL_ALLTOALL_BATCH", config.coll_alltoall_batch, 1)?;
        config.coll_hierarchy = reader.choice(
            "BRAID_COLL_HIERARCHY",
            config.coll_hierarchy,
            &[("auto", HierarchyMode::Auto), ("off", HierarchyMode::Off), ("always", HierarchyMode::Always), ("segment", HierarchyMode::Segment)],
        )?;
        config.progress_thread = reader.choice("BRAID_PROGRESS_THREAD", config.progress_thread, &[("on", true), ("1", true), ("off", false), ("0", false)])?;
        config.shm = reader.choice("BRAID_SHM", config.shm, &[("on", true), ("1", true), ("off", false), ("0", false)])?;
        config.rails = reader.rails("BRAID_RAILS", config.rails)?;
        config.strategy = reader.choice(
            "BRAID_STRATEGY",
            config.strategy,
            &[("single", StrategyKind::Single), ("greedy", StrategyKind::Greedy), ("iso", StrategyKind::Iso), ("weighted", StrategyKind::Weighted), ("hetero", StrategyKind::Hetero)],
        )?;
        config.profile_dir = reader.text("BRAID_PROFILE_DIR", config.profile_dir)?;
        config.sample_ms = reader.number_u32("BRAID_SAMPLE_MS", config.sample_ms, 1)?;
        config.split_min = reader.number("BRAID_SPLIT_MIN", config.split_min, 1)?;
        config.rail_timeout_ms = reader.number("BRAID_RAIL_TIMEOUT_MS", config.rail_timeout_ms, 1)?;
        config.rail_keepalive_s = reader.number_u32("BRAID_RAIL_KEEPALIVE_S", config.rail_keepalive_s, 0)?;
        config.rail_congestion = reader.congestion_control("BRAID_RAIL_CONGESTION", config.rail_congestion)?;
        config.rail_delay_fresh_ms = reader.number_u32("BRAID_RAIL_DELAY_FRESH_MS", config.rail_delay_fresh_ms, 0)?;
        config.rail_receive_block = reader.number("BRAID_RAIL_RECEIVE_BLOCK", config.rail_receive_block, 64 * 1024)?;
        config.rate_smoothing = reader.fraction("BRAID_RATE_SMOOTHING", config.rate_smoothing)?;
        config.rail_queue_us = reader.number("BRAID_RAIL_QUEUE_US", config.rail_queue_us, 0)?;
        config.rail_refill = reader.fraction("BRAID_RAIL_REFILL", config.rail_refill)?;
        config.rail_hedge = reader.choice("BRAID_RAIL_HEDGE", config.rail_hedge, &[("on", true), ("off", false), ("1", true), ("0", false)])?;
        config.offload = reader.choice("BRAID_OFFLOAD", config.offload, &[("auto", OffloadMode::Auto), ("on", OffloadMode::Auto), ("off", OffloadMode::Off)])?;
        config.offload_cost_ns = reader.optional_micros("BRAID_OFFLOAD_COST_US", config.offload_cost_ns)?;
        config.unfinalized_wait_s = reader.number_u32("BRAID_UNFINALIZED_WAIT_S", config.unfinalized_wait_s, 0)?;
        config.connect_timeout_s = reader.number_u32("BRAID_CONNECT_TIMEOUT_S", config.connect_timeout_s, 1)?;
        config.unexpected_mark = reader.number("BRAID_UNEXPECTED_MARK", config.unexpected_mark, 0)?;
        config.debug = reader.choice("BRAID_DEBUG", config.debug, &[("0", false), ("1", true), ("off", false), ("on", true)])?;
        Ok(config)
    }
}

struct Reader<'a, F: Fn(&str) -> Option<String>> {
    lookup: &'a F,
}

/// How the size settings may be written, appended to their accepted range.
const SIZE_SYNTAX: &str = "(a plain number, or with a k, m or g suffix for KiB, MiB, GiB)";

impl<F: Fn(&str) -> Option<String>> Reader<'_, F> {
    fn number(&mut self, variable: &'static str, default: usize, minimum: usize) -> Result<usize, ConfigError> {
        self.bounded(variable, default, minimum, usize::MAX)
    }

    fn number_u32(&mut self, variable: &'static str, default: u32, minimum: u32) -> Result<u32, ConfigError> {
        Ok(self.bounded(variable, default as usize, minimum as usize, u32::MAX as usize)? as u32)
    }

    fn power_of_two(&mut self, variable: &'static str, default: usize, minimum: usize) -> Result<usize, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        match parse_size(text.trim()) {
            Some(value) if value >= minimum && value.is_power_of_two() => Ok(value),
            _ => Err(ConfigError { variable, value: text, expected: format!("a power of two >= {minimum} {SIZE_SYNTAX}") }),
        }
    }

    /// A size in `minimum..=maximum`; the error states that range.
    fn bounded(&mut self, variable: &'static str, default: usize, minimum: usize, maximum: usize) -> Result<usize, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        match parse_size(text.trim()) {
            Some(value) if (minimum..=maximum).contains(&value) => Ok(value),
            _ => Err(ConfigError { variable, value: text, expected: range_phrase(minimum, maximum) }),
        }
    }

    fn choice<T: Copy>(&mut self, variable: &'static str, default: T, choices: &[(&str, T)]) -> Result<T, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        let wanted = text.trim().to_ascii_lowercase();
        match choices.iter().find(|(name, _)| *name == wanted) {
            Some((_, value)) => Ok(*value),
            None => {
                let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
                Err(ConfigError { variable, value: text, expected: format!("one of {}", names.join(", ")) })
            }
        }
    }
}

/// The accepted range of a size setting, in words.
fn range_phrase(minimum: usize, maximum: usize) -> String {
    if maximum == usize::MAX {
        format!("an integer >= {minimum} {SIZE_SYNTAX}")
    } else {
        format!("an integer from {minimum} to {maximum} {SIZE_SYNTAX}")
    }
}

impl<F: Fn(&str) -> Option<String>> Reader<'_, F> {
    fn text(&mut self, variable: &'static str, default: String) -> Result<String, ConfigError> {
        match (self.lookup)(variable) {
            Some(text) if text.trim().is_empty() => Err(ConfigError { variable, value: text, expected: "a non-empty path".to_string() }),
            Some(text) => Ok(text.trim().to_string()),
            None => Ok(default),
        }
    }

    /// `system` (None) or a congestion control name as the kernel writes them: 1-15 lowercase
    /// letters, digits and underscores (TCP_CA_NAME_MAX is 16 with its NUL).
    fn congestion_control(&mut self, variable: &'static str, default: Option<String>) -> Result<Option<String>, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        let name = text.trim().to_ascii_lowercase();
        if name == "system" {
            return Ok(None);
        }
        if (1..=15).contains(&name.len()) && name.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_') {
            return Ok(Some(name));
        }
        Err(ConfigError { variable, value: text, expected: "system, or the name of a TCP congestion control (e.g. cubic, bbr): 1-15 letters, digits or underscores".to_string() })
    }

    fn fraction(&mut self, variable: &'static str, default: f64) -> Result<f64, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        match text.trim().parse::<f64>() {
            Ok(value) if value > 0.0 && value <= 1.0 => Ok(value),
            _ => Err(ConfigError { variable, value: text, expected: "a number greater than 0 and at most 1".to_string() }),
        }
    }

    fn optional_micros(&mut self, variable: &'static str, default: Option<u64>) -> Result<Option<u64>, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        match text.trim().parse::<f64>() {
            Ok(micros) if micros >= 0.0 && micros.is_finite() => Ok(Some((micros * 1000.0) as u64)),
            _ => Err(ConfigError { variable, value: text, expected: "microseconds, a number >= 0 (fractions allowed)".to_string() }),
        }
    }

    fn rails(&mut self, variable: &'static str, default: Rails) -> Result<Rails, ConfigError> {
        let Some(text) = (self.lookup)(variable) else { return Ok(default) };
        let trimmed = text.trim();
        match trimmed.to_ascii_lowercase().as_str() {
            "auto" => Ok(Rails::Auto),
            "none" | "off" => Ok(Rails::None),
            _ => {
                let names: Vec<String> = trimmed.split(',').map(|name| name.trim().to_string()).collect();
                let valid = |name: &String| !name.is_empty() && name.len() < 16 && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.@".contains(&b));
                if names.iter().all(valid) {
                    Ok(Rails::Named(names))
                } else {
                    let expected = "auto, none, or a comma-separated list of interface names (1 to 15 letters, digits, '-', '_', '.' or '@' each)";
                    Err(ConfigError { variable, value: text, expected: expected.to_string() })
                }
            }
        }
    }
}

/// Parses `4096`, `64k`, `1m`, `2g` (binary multiples).
pub fn parse_size(text: &str) -> Option<usize> {
    let lower = text.to_ascii_lowercase();
    let (digits, multiplier) = match lower.as_bytes().last()? {
        b'k' => (&lower[..lower.len() - 1], 1usize << 10),
        b'm' => (&lower[..lower.len() - 1], 1 << 20),
        b'g' => (&lower[..lower.len() - 1], 1 << 30),
        _ => (&lower[..], 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(multiplier)
}

/// BRAID_* variables that are not settings of the library: the compiler wrappers', the ones the
/// launcher gives each rank, and the job profiler's (BRAID_PROFILE: where it writes).
pub const OTHER_VARIABLES: &[&str] = &["BRAID_CC", "BRAID_CXX", "BRAID_LIBDIR", "BRAID_LOCAL_RANK", "BRAID_LOCAL_SIZE", "BRAID_NODE_NAME", "BRAID_PROFILE"];

/// A BRAID_* variable that Braid does not read (most likely a misspelt setting).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownVariable {
    pub name: String,
    /// The setting whose name is closest, when it is close enough to be the one meant.
    pub suggestion: Option<&'static str>,
}

impl fmt::Display for UnknownVariable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.suggestion {
            Some(setting) => write!(f, "{} is not a Braid setting (did you mean {setting}?)", self.name),
            None => write!(f, "{} is not a Braid setting (`braid config` lists them)", self.name),
        }
    }
}

/// The names among `names` that start with BRAID_ but are neither a setting nor one of
/// [`OTHER_VARIABLES`], in the order given.
pub fn unknown_variables<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<UnknownVariable> {
    let known = |name: &str| SETTINGS.iter().any(|setting| setting.variable == name) || OTHER_VARIABLES.contains(&name);
    names
        .into_iter()
        .filter(|name| name.starts_with("BRAID_") && !known(name))
        .map(|name| {
            let closest = SETTINGS.iter().map(|setting| (edit_distance(name, setting.variable), setting.variable)).min();
            // A third of the name may differ: catches typos and dropped words, not unrelated names.
            let suggestion = closest.filter(|(distance, variable)| *distance <= variable.len() / 3).map(|(_, variable)| variable);
            UnknownVariable { name: name.to_string(), suggestion }
        })
        .collect()
}

/// Levenshtein distance between two ASCII names.
fn edit_distance(a: &str, b: &str) -> usize {
    let b = b.as_bytes();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, &byte_a) in a.as_bytes().iter().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, &byte_b) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(byte_a != byte_b);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config_of(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::from_lookup(|name| map.get(name).cloned())
    }

    #[test]
    fn defaults_when_nothing_is_set() {
        assert_eq!(config_of(&[]).unwrap(), Config::default());
    }

    #[test]
    fn values_and_suffixes_are_read() {
        let config = config_of(&[("BRAID_WAIT", "block"), ("BRAID_EAGER_MAX", "16k"), ("BRAID_CMA", "off")]).unwrap();
        assert_eq!(config.wait, WaitMode::Block);
        assert_eq!(config.eager_max, 16 * 1024);
        assert_eq!(config.cma, CmaMode::Off);
    }

    #[test]
    fn docs_settings_page_is_current() {
        let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/settings.md")).unwrap_or_default();
        assert!(page == settings_markdown(), "docs/settings.md is stale: run `braid config --markdown > docs/settings.md`");
    }

    #[test]
    fn multirail_settings_are_read() {
        let config = config_of(&[("BRAID_RAILS", "veth1, veth2"), ("BRAID_STRATEGY", "weighted"), ("BRAID_SHM", "off"), ("BRAID_OFFLOAD_COST_US", "3.5")]).unwrap();
        assert_eq!(config.rails, Rails::Named(vec!["veth1".into(), "veth2".into()]));
        assert_eq!(config.strategy, StrategyKind::Weighted);
        assert!(!config.shm);
        assert_eq!(config.offload_cost_ns, Some(3500));
        assert!(config_of(&[("BRAID_RAILS", "a b")]).is_err());
        assert!(config_of(&[("BRAID_RATE_SMOOTHING", "1.5")]).is_err());
    }

    #[test]
    fn the_rails_congestion_control_is_the_systems_or_a_kernel_name() {
        assert_eq!(config_of(&[]).unwrap().rail_congestion, None);
        assert_eq!(config_of(&[("BRAID_RAIL_CONGESTION", "system")]).unwrap().rail_congestion, None);
        assert_eq!(config_of(&[("BRAID_RAIL_CONGESTION", " Cubic ")]).unwrap().rail_congestion.as_deref(), Some("cubic"));
        assert_eq!(config_of(&[("BRAID_RAIL_CONGESTION", "bbr2")]).unwrap().rail_congestion.as_deref(), Some("bbr2"));
        for bad in ["", "cu bic", "cubic;reno", "a_name_far_too_long"] {
            let error = config_of(&[("BRAID_RAIL_CONGESTION", bad)]).unwrap_err();
            assert!(error.to_string().contains("system, or the name of a TCP congestion control"), "{bad:?}: {error}");
        }
    }

    #[test]
    fn bad_values_name_the_variable() {
        let error = config_of(&[("BRAID_WAIT", "sometimes")]).unwrap_err();
        assert_eq!(error.variable, "BRAID_WAIT");
        assert!(config_of(&[("BRAID_SHM_RING_CELLS", "100")]).is_err());
        assert!(config_of(&[("BRAID_SHM_POOL_BUFFERS", "x")]).is_err());
    }

    #[test]
    fn errors_state_the_accepted_values_or_range() {
        let message = |pairs: &[(&str, &str)]| config_of(pairs).unwrap_err().to_string();
        assert_eq!(message(&[("BRAID_WAIT", "sometimes")]), "BRAID_WAIT=\"sometimes\" is not valid: expected one of auto, poll, block");
        assert!(message(&[("BRAID_SHM_POOL_BUFFERS", "1")]).ends_with("expected an integer >= 2 (a plain number, or with a k, m or g suffix for KiB, MiB, GiB)"));
        assert!(message(&[("BRAID_SHM_RING_CELLS", "100")]).contains("expected a power of two >= 8"));
        assert!(message(&[("BRAID_SHM_RING_CELLS", "4")]).contains("expected a power of two >= 8"));
        assert!(message(&[("BRAID_SPIN_COUNT", "5000000000")]).contains("expected an integer from 0 to 4294967295"));
        assert!(message(&[("BRAID_RATE_SMOOTHING", "0")]).contains("greater than 0 and at most 1"));
        assert!(message(&[("BRAID_RAILS", "eth0,,eth1")]).contains("auto, none, or a comma-separated list"));
        assert!(message(&[("BRAID_OFFLOAD_COST_US", "-1")]).contains("a number >= 0"));
        assert_eq!(config_of(&[("BRAID_SPIN_COUNT", "4294967295")]).unwrap().spin_count, u32::MAX);
        assert_eq!(config_of(&[("BRAID_SHM_RING_CELLS", "1k")]).unwrap().shm_ring_cells, 1024);
    }

    #[test]
    fn unknown_braid_variables_are_found_with_the_setting_meant() {
        let names = ["BRAID_WAIT", "BRAID_WIAT", "BRAID_LOCAL_RANK", "BRAID_CC", "PATH", "BRAID_EAGER", "BRAID_SOMETHING_ELSE"];
        let unknown = unknown_variables(names);
        assert_eq!(
            unknown,
            vec![
                UnknownVariable { name: "BRAID_WIAT".into(), suggestion: Some("BRAID_WAIT") },
                UnknownVariable { name: "BRAID_EAGER".into(), suggestion: Some("BRAID_EAGER_MAX") },
                UnknownVariable { name: "BRAID_SOMETHING_ELSE".into(), suggestion: None },
            ]
        );
        assert_eq!(unknown[0].to_string(), "BRAID_WIAT is not a Braid setting (did you mean BRAID_WAIT?)");
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn every_setting_read_is_documented_and_every_documented_one_read() {
        let source = include_str!("lib.rs");
        let body_start = source.find("pub fn from_lookup").unwrap();
        let body = &source[body_start..body_start + source[body_start..].find("\n    }\n").unwrap()];
        let read: Vec<&str> = body.split('"').filter(|piece| piece.starts_with("BRAID_")).collect();
        for name in &read {
            assert!(SETTINGS.iter().any(|s| s.variable == *name), "{name} is read but not in SETTINGS");
        }
        for setting in SETTINGS {
            assert!(read.contains(&setting.variable), "{} is documented but never read", setting.variable);
        }
    }
}
