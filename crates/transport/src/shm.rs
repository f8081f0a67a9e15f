//! The shared-memory transport: frames between ranks of one node, through memory they all map.
//!
//! # Design (after MVAPICH's cache-aware intra-node design, Panda 2007)
//!
//! Every rank with at least one other rank on its node creates ONE segment,
//! `/dev/shm/braid-<job>-<rank>` (`<job>` is the bootstrap's job id reduced to `[A-Za-z0-9_-]`).
//! The segment is created, zeroed and faulted in by its owner, so on NUMA machines the memory
//! the owner *receives* through sits on the owner's node. Layout, every region cache-line aligned:
//!
//! ```text
//! offset 0     header      magic, ring cells, ring count, pool buffers, buffer size, inline max, pid
//! 64           doorbell    futex counter (own line), sleeping flag (own line)
//! 192          rings       one per other local rank (the senders to this owner), each:
//!                            consumed position (own line) + ring_cells cells of 64 bytes
//! ...          pool states one line per buffer of this owner's send pool (0 free, 1 busy)
//! page-aligned pool        shm_pool_buffers x shm_pool_buffer_size bytes
//! ```
//!
//! The ring from local rank `s` to local rank `r` is slot `s` (or `s - 1` when `s > r`) of `r`'s
//! segment. Sizes come from [`Config`]; every rank of a node must use the same values (checked).
//!
//! ## Wire-up (collective, in `connect`)
//! 1. Each rank publishes its node identity (host name + kernel boot id) and fences; ranks with the
//!    same identity are "local", ordered by rank.
//! 2. Each rank that has local peers creates its segment; fence.
//! 3. Each rank maps the segments of its local peers and checks their headers; fence.
//! 4. Each rank unlinks its own file at once: from here on nothing of the job remains in /dev/shm,
//!    even if a process is killed; the memory lives while any rank maps it.
//!
//! Failures in steps 2-3 are reported only after the remaining fences, so every rank completes
//! the same number of fences and no rank is left waiting.
//!
//! ## Frames
//! A frame is the engine header (<= [`MAX_HEADER`]) plus a payload. Header and payload together
//! up to `shm_inline_max` bytes travel *inline* in the ring cells (see `ring` for the lap-stamped,
//! single-producer single-consumer protocol: the first word of the first cell is written last,
//! with Release). Larger payloads (up to `shm_pool_buffer_size`) are copied into a free buffer of
//! the sender's pool, and a small descriptor frame (buffer index, length, header) goes through the
//! same ring, so the frames of one pair stay one ordered stream. The receiver hands the payload to
//! the engine straight from the pool buffer, then marks the buffer free. A pooled payload of at
//! least `shm_handover_min` bytes sent to a receiver that has read every earlier frame (so is
//! likely waiting) is *handed over*: the descriptor goes first, then the sender copies the payload
//! in `shm_handover_chunk` pieces, publishing its progress after each, and the receiver copies
//! each piece out as it lands (`Payload::Filling`). No free cell or buffer:
//! `try_send` answers `WouldBlock`. Every shared control word is an atomic; the only plain copies
//! are into and out of pool buffers, handed over by the Release/Acquire of the ring stamp and of
//! the buffer state.
//!
//! ## Doorbell
//! A receiver about to block calls `prepare_sleep` (reads the futex counter, sets its sleeping
//! flag, SeqCst fence), polls once more, then waits on the futex (shared, not private) with a
//! timeout. After publishing a frame, a sender issues a SeqCst fence and looks at the receiver's
//! sleeping flag: only if it is set does it bump the counter and call futex wake. So an awake
//! receiver costs a sender a fence and a load, never a system call.
//!
//! ## Large messages
//! `remote_read` and `remote_write` are cross-memory attach (`process_vm_readv`/`writev`),
//! chunked by `cma_chunk`; every rank allows any process of its user to access it
//! (`PR_SET_PTRACER_ANY`) at wire-up. A kernel refusal (EPERM) is reported as
//! [`TransportError::RemoteAccessRefused`] so the engine can fall back to the two-copy pipeline
//! through the pool. The share word beside each ring's consumed position settles who copies the
//! second half of a shared copy (`offer_share`, `claim_share`, `revoke_share`; see `ring.rs`).

pub mod copy_assist;
mod pool;
pub mod reduction;
pub mod ring;
mod segment;

use std::io::{self, IoSlice};
use std::sync::Arc;

use braid_config::{CmaMode, Config};
use braid_lane::{Capabilities, PeerId, Profile};
use braid_pmi::Bootstrap;
use braid_sys::{cma, process, shm};

use crate::{Incoming, Payload, RemoteRegion, SendOutcome, SharedDoorbell, Transport, TransportError, MAX_HEADER};
use ring::{frame_cells, Consumer, Producer, ONE_CELL_BYTES};
use segment::{Layout, Segment};

/// Tag bit of a descriptor frame whose payload is in a pool buffer.
const POOLED: u32 = 1 << 31;
/// Tag bit of a pooled frame whose payload the sender is still writing (see `pool`).
const HANDED_OVER: u32 = 1 << 30;
const HEADER_LEN_MASK: u32 = 0xff;
const POOL_INDEX_SHIFT: u32 = 8;
/// Pool indices travel in 16 bits of the frame tag.
const MAX_POOL_BUFFERS: usize = 1 << 16;
/// A descriptor frame's data: the payload length (8 bytes), then the header.
const DESCRIPTOR_PREFIX: usize = 8;
const NOT_LOCAL: u32 = u32::MAX;

/// The sending side of the ring to one local peer.
struct Outbound {
    producer: Producer,
    /// Index into `ShmTransport::segments` of the receiver's segment (its doorbell).
    segment: usize,
}

/// The receiving side of the ring from one local peer.
struct Inbound {
    peer: PeerId,
    consumer: Consumer,
    /// Token of the latest shared-copy offer to this peer.
    share_token: u64,
    /// Index into `ShmTransport::segments` of the sender's segment (its pool).
    segment: usize,
}

/// Shared-memory transport between the ranks of one node.
pub struct ShmTransport {
    ring_cells: usize,
    inline_max: usize,
    pool_buffers: usize,
    pool_buffer_size: usize,
    handover_min: usize,
    handover_chunk: usize,
    cma: bool,
    cma_chunk: usize,
    profile: Profile,
    connected: bool,
    rank: u32,
    /// Job ranks on this node, this one included, ascending.
    node_ranks: Vec<u32>,
    /// For each job rank: its index in `node_ranks`, or NOT_LOCAL.
    local_index: Vec<u32>,
    /// Indexed by local index; None for this rank itself.
    outbound: Vec<Option<Outbound>>,
    inbound: Vec<Inbound>,
    next_inbound: usize,
    pool_cursor: usize,
    scratch: Vec<u8>,
    /// The processes of the other local ranks (their segments' creators), with their ranks.
    watch: Option<(braid_sys::process::ProcessWatch, Vec<u32>)>,
    /// Indexed by local index: every local rank's segment, this rank's own included. Mapped for as
    /// long as the ring and pool views above are used (dropped last).
    segments: Vec<Arc<Segment>>,
}

impl ShmTransport {
    /// A transport sized by `config`; nothing is shared until [`Transport::connect`].
    pub fn new(config: &Config) -> Result<ShmTransport, TransportError> {
        let largest_ring_data = config.shm_inline_max.max(DESCRIPTOR_PREFIX + MAX_HEADER);
        if config.shm_inline_max > u32::MAX as usize || frame_cells(largest_ring_data) > config.shm_ring_cells {
            return Err(TransportError::System(format!(
                "BRAID_SHM_INLINE_MAX={} needs {} ring cells but BRAID_SHM_RING_CELLS={}",
                config.shm_inline_max,
                frame_cells(largest_ring_data),
                config.shm_ring_cells
            )));
        }
        if !config.shm_ring_cells.is_power_of_two() {
            return Err(TransportError::System(format!("BRAID_SHM_RING_CELLS={} is not a power of two", config.shm_ring_cells)));
        }
        if config.shm_pool_buffers == 0 || config.shm_pool_buffers > MAX_POOL_BUFFERS {
            return Err(TransportError::System(format!("BRAID_SHM_POOL_BUFFERS={} must be between 1 and {MAX_POOL_BUFFERS}", config.shm_pool_buffers)));
        }
        Ok(ShmTransport {
            ring_cells: config.shm_ring_cells,
            inline_max: config.shm_inline_max,
            pool_buffers: config.shm_pool_buffers,
            pool_buffer_size: config.shm_pool_buffer_size,
            handover_min: config.shm_handover_min,
            handover_chunk: config.shm_handover_chunk.max(64),
            cma: config.cma == CmaMode::Auto,
            cma_chunk: config.cma_chunk.max(1),
            profile: Profile::from_model(400.0, 4e9, config.shm_pool_buffer_size),
            connected: false,
            rank: 0,
            node_ranks: Vec::new(),
            local_index: Vec::new(),
            outbound: Vec::new(),
            inbound: Vec::new(),
            next_inbound: 0,
            pool_cursor: 0,
            scratch: vec![0; ring::Consumer::scratch_len(largest_ring_data)],
            watch: None,
            segments: Vec::new(),
        })
    }

    /// Job ranks on this node, this one included, ascending (empty before `connect`).
    pub fn node_ranks(&self) -> &[u32] {
        &self.node_ranks
    }

    /// The shared-memory file name of `rank`'s segment in job `job_id`.
    pub fn segment_name(job_id: &str, rank: u32) -> String {
        let job: String = job_id.chars().take(200).map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect();
        format!("braid-{job}-{rank}")
    }

    fn layout(&self, local_ranks: usize) -> Layout {
        Layout { ring_cells: self.ring_cells, rings: local_ranks - 1, pool_buffers: self.pool_buffers, pool_buffer_size: self.pool_buffer_size, inline_max: self.inline_max }
    }

    fn local_of(&self, peer: PeerId) -> Option<usize> {
        match self.local_index.get(peer as usize) {
            Some(&index) if index != NOT_LOCAL => Some(index as usize),
            _ => None,
        }
    }

    /// The checks every remote read or write (`what`) of `len` bytes at `offset` passes first.
    fn check_remote_access(&self, peer: PeerId, remote: RemoteRegion, offset: u64, len: usize, what: &str) -> Result<(), TransportError> {
        if !self.cma {
            return Err(TransportError::Unsupported("remote memory access (BRAID_CMA=off)"));
        }
        if !self.reaches(peer) {
            return Err(TransportError::Unreachable(peer));
        }
        let within = matches!(offset.checked_add(len as u64), Some(end) if end <= remote.len);
        if !within {
            return Err(TransportError::System(format!("remote {what} of {len} bytes at offset {offset} exceeds the exposed {} bytes", remote.len)));
        }
        Ok(())
    }

    /// Runs `copy(done, chunk)` over `len` bytes, at most `cma_chunk` per system call, until all
    /// are copied.
    fn copy_in_chunks(&self, len: usize, call: &str, pid: i32, mut copy: impl FnMut(usize, usize) -> io::Result<usize>) -> Result<(), TransportError> {
        let mut done = 0;
        while done < len {
            let chunk = (len - done).min(self.cma_chunk);
            match copy(done, chunk) {
                Ok(0) => return Err(TransportError::System(format!("{call} with pid {pid} made no progress"))),
                Ok(copied) => done += copied,
                Err(error) => return Err(remote_access_error(error, call, pid)),
            }
        }
        Ok(())
    }

    fn own_segment(&self) -> Option<&Arc<Segment>> {
        self.local_of(self.rank).and_then(|index| self.segments.get(index))
    }

    /// Frames whose payload does not fit inline: payload into a pool buffer, descriptor in the ring.
    fn send_pooled(&mut self, local: usize, header: &[u8], payload: &[IoSlice<'_>], payload_len: usize) -> Result<SendOutcome, TransportError> {
        if payload_len > self.pool_buffer_size {
            return Err(TransportError::TooLarge { len: payload_len, max: self.pool_buffer_size });
        }
        let own = self.local_of(self.rank).expect("connected rank is local");
        let pool = self.segments[own].pool();
        let Some(outbound) = self.outbound[local].as_mut() else { return Err(TransportError::Unreachable(self.node_ranks[local])) };
        let data_len = DESCRIPTOR_PREFIX + header.len();
        if !outbound.producer.has_room(frame_cells(data_len)) {
            return Ok(SendOutcome::WouldBlock);
        }
        let Some(index) = pool.acquire(&mut self.pool_cursor) else { return Ok(SendOutcome::WouldBlock) };
        // Handed over only to a receiver that has read everything before: it is likely waiting
        // for this frame. Behind a backlog it would find the payload written anyway, and the
        // progress stores would only slow a stream down (8-32 KiB `bibw` lost 5-15%).
        let handover = payload_len >= self.handover_min && outbound.producer.is_drained();
        let mut tag = POOLED | header.len() as u32 | (index as u32) << POOL_INDEX_SHIFT;
        if handover {
            pool.start_handover(index);
            tag |= HANDED_OVER;
        } else {
            pool.fill(index, payload);
        }
        outbound.producer.push(tag, data_len, |writer| {
            writer.put(&(payload_len as u64).to_le_bytes());
            writer.put(header);
        });
        self.segments[outbound.segment].doorbell().ring();
        if handover {
            pool.fill_handed_over(index, payload, self.handover_chunk);
        }
        Ok(SendOutcome::Sent)
    }

    /// Drains every inbound ring, starting one further along each time so that no sender is
    /// always served last.
    #[inline(never)]
    fn drain_all(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        let rings = self.inbound.len();
        let start = self.next_inbound;
        self.next_inbound = if start + 1 == rings { 0 } else { start + 1 };
        let mut delivered = 0;
        for step in 0..rings {
            let slot = if start + step >= rings { start + step - rings } else { start + step };
            delivered += self.drain(slot, deliver);
        }
        delivered
    }

    /// Delivers the frames waiting in inbound ring `slot` (at most one ring's worth).
    #[inline]
    fn drain(&mut self, slot: usize, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        let inbound = &mut self.inbound[slot];
        let mut cells_budget = self.ring_cells;
        let mut delivered = 0;
        while let Some(frame) = inbound.consumer.read(&mut self.scratch) {
            let data = &self.scratch[..frame.data_len];
            let header_len = (frame.tag & HEADER_LEN_MASK) as usize;
            if frame.tag & POOLED == 0 {
                let (header, payload) = data.split_at(header_len);
                deliver(Incoming { peer: inbound.peer, header, payload: Payload::Complete(payload) });
            } else {
                let index = ((frame.tag & !(POOLED | HANDED_OVER)) >> POOL_INDEX_SHIFT) as usize;
                let (length, header) = data.split_at(DESCRIPTOR_PREFIX);
                let payload_len = u64::from_le_bytes(length.try_into().expect("8-byte length")) as usize;
                let pool = self.segments[inbound.segment].pool();
                let header = &header[..header_len];
                if frame.tag & HANDED_OVER == 0 {
                    // SAFETY: the descriptor was just read (Acquire on its stamp, after the sender
                    // filled the buffer); the slice is dropped before the buffer is released below.
                    let payload = unsafe { pool.payload(index, payload_len) };
                    deliver(Incoming { peer: inbound.peer, header, payload: Payload::Complete(payload) });
                } else {
                    // SAFETY: as above; the handle is dropped before the release below. Whatever
                    // of the payload the engine did not read may still be being written then,
                    // which is harmless: only its writer can take the buffer again.
                    let filling = unsafe { pool.handed_over(index, payload_len) };
                    deliver(Incoming { peer: inbound.peer, header, payload: Payload::Filling(&filling) });
                }
                pool.release(index);
            }
            inbound.consumer.release(frame);
            delivered += 1;
            cells_budget = cells_budget.saturating_sub(frame_cells(frame.data_len));
            if cells_budget == 0 {
                break;
            }
        }
        delivered
    }

    /// Steps 2-4 of the wire-up (see the module comment); `local_ranks` includes this rank.
    fn attach(&mut self, bootstrap: &mut dyn Bootstrap, local_ranks: &[u32]) -> Result<(), TransportError> {
        let job_id = bootstrap.job_id().to_string();
        let own_local = local_ranks.iter().position(|&r| r == self.rank).expect("this rank is local to itself");
        let alone = local_ranks.len() == 1;
        let layout = self.layout(local_ranks.len());
        let own_name = ShmTransport::segment_name(&job_id, self.rank);
        let mut failure: Option<TransportError> = None;

        let own = match alone {
            true => None,
            false => match Segment::create(&own_name, layout) {
                Ok(segment) => Some(segment),
                Err(error) => {
                    failure = Some(TransportError::System(format!("cannot create shared memory {own_name}: {error}")));
                    None
                }
            },
        };
        let unlink_own = UnlinkOnDrop(own.as_ref().map(|_| own_name.clone()));
        fence(bootstrap)?;

        let mut segments = Vec::with_capacity(local_ranks.len());
        if let Some(own) = own {
            let mut own = Some(own);
            for (local, &rank) in local_ranks.iter().enumerate() {
                let opened = if local == own_local { Ok(own.take().expect("own segment is placed once")) } else { Segment::open(&ShmTransport::segment_name(&job_id, rank), layout) };
                match opened {
                    Ok(segment) => segments.push(Arc::new(segment)),
                    Err(reason) => {
                        failure.get_or_insert(TransportError::System(reason));
                        break;
                    }
                }
            }
        }
        fence(bootstrap)?;
        drop(unlink_own);
        if let Some(error) = failure {
            return Err(error);
        }
        if alone {
            return Ok(());
        }

        let others: Vec<usize> = (0..local_ranks.len()).filter(|&local| local != own_local).collect();
        let pids: Vec<i32> = others.iter().map(|&local| segments[local].owner_pid()).collect();
        self.watch = Some((braid_sys::process::ProcessWatch::new(&pids), others.iter().map(|&local| local_ranks[local]).collect()));
        self.segments = segments;
        self.outbound = (0..local_ranks.len())
            .map(|receiver| (receiver != own_local).then(|| Outbound { producer: Producer::new(self.segments[receiver].ring(ring_slot(own_local, receiver))), segment: receiver }))
            .collect();
        self.inbound = (0..local_ranks.len())
            .filter(|&sender| sender != own_local)
            .map(|sender| Inbound { peer: local_ranks[sender], share_token: 0, consumer: Consumer::new(self.segments[own_local].ring(ring_slot(sender, own_local))), segment: sender })
            .collect();
        Ok(())
    }
}

/// The slot, in the receiver's segment, of the ring from `sender` (local indices, distinct).
fn ring_slot(sender: usize, receiver: usize) -> usize {
    if sender < receiver {
        sender
    } else {
        sender - 1
    }
}

fn fence(bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
    bootstrap.fence().map_err(|error| TransportError::Bootstrap(error.to_string()))
}

/// Removes this rank's segment file when wire-up ends, whether it succeeded or not.
struct UnlinkOnDrop(Option<String>);

impl Drop for UnlinkOnDrop {
    fn drop(&mut self) {
        if let Some(name) = &self.0 {
            let _ = shm::unlink(name);
        }
    }
}

/// Maps a failed `process_vm_readv`/`process_vm_writev` (`call`) to the transport's error.
fn remote_access_error(error: io::Error, call: &str, pid: i32) -> TransportError {
    if cma::is_refused(&error) {
        TransportError::RemoteAccessRefused
    } else {
        TransportError::System(format!("{call} with pid {pid}: {error}"))
    }
}

impl Transport for ShmTransport {
    fn name(&self) -> &str {
        "shm"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            max_payload: self.pool_buffer_size.max(self.inline_max.saturating_sub(MAX_HEADER)),
            max_inline: self.inline_max.saturating_sub(MAX_HEADER),
            remote_read: self.cma,
            wakes_receiver: true,
        }
    }

    fn profile(&self) -> &Profile {
        &self.profile
    }

    fn connect(&mut self, bootstrap: &mut dyn Bootstrap) -> Result<(), TransportError> {
        if self.connected {
            return Err(TransportError::Unsupported("connecting the shm transport twice"));
        }
        self.rank = bootstrap.rank();
        let size = bootstrap.size();
        if self.cma {
            // Failure only means peers may be refused later, which has a fallback.
            let _ = process::allow_ptrace_from_any();
        }
        let identity = process::node_identity().map_err(|error| TransportError::System(format!("cannot identify this node: {error}")))?;
        let bootstrap_error = |error: braid_pmi::BootstrapError| TransportError::Bootstrap(error.to_string());
        bootstrap.put(&format!("braid-shm-node-{}", self.rank), &identity).map_err(bootstrap_error)?;
        fence(bootstrap)?;
        let mut local_ranks = Vec::new();
        for rank in 0..size {
            if bootstrap.get(&format!("braid-shm-node-{rank}")).map_err(bootstrap_error)? == identity {
                local_ranks.push(rank);
            }
        }
        self.attach(bootstrap, &local_ranks)?;
        self.local_index = vec![NOT_LOCAL; size as usize];
        for (index, &rank) in local_ranks.iter().enumerate() {
            self.local_index[rank as usize] = index as u32;
        }
        self.node_ranks = local_ranks;
        self.connected = true;
        Ok(())
    }

    fn reaches(&self, peer: PeerId) -> bool {
        peer != self.rank && self.local_of(peer).is_some_and(|local| self.outbound.get(local).is_some_and(Option::is_some))
    }

    #[inline]
    fn try_send(&mut self, peer: PeerId, header: &[u8], payload: &[IoSlice<'_>]) -> Result<SendOutcome, TransportError> {
        let Some(local) = self.local_of(peer).filter(|_| peer != self.rank) else { return Err(TransportError::Unreachable(peer)) };
        if header.len() > MAX_HEADER {
            return Err(TransportError::Unsupported("frame header longer than MAX_HEADER"));
        }
        let payload_len: usize = payload.iter().map(|slice| slice.len()).sum();
        let data_len = header.len() + payload_len;
        if data_len > self.inline_max {
            return self.send_pooled(local, header, payload, payload_len);
        }
        let Some(outbound) = self.outbound[local].as_mut() else { return Err(TransportError::Unreachable(peer)) };
        if !outbound.producer.has_room(frame_cells(data_len)) {
            return Ok(SendOutcome::WouldBlock);
        }
        match payload {
            [single] if data_len <= ONE_CELL_BYTES => outbound.producer.push_one_cell(header.len() as u32, header, single),
            _ => outbound.producer.push(header.len() as u32, data_len, |writer| {
                writer.put(header);
                for slice in payload {
                    writer.put(slice);
                }
            }),
        }
        self.segments[outbound.segment].doorbell().ring();
        Ok(SendOutcome::Sent)
    }

    fn poll(&mut self, deliver: &mut dyn FnMut(Incoming<'_>)) -> usize {
        // Most polls of a waiting rank find every ring empty: one stamp load per ring says so,
        // and the draining (a call) is skipped, with the registers it would have to save.
        if !self.inbound.iter().any(|inbound| inbound.consumer.has_frame()) {
            return 0;
        }
        self.drain_all(deliver)
    }

    fn remote_read(&mut self, peer: PeerId, remote: RemoteRegion, offset: u64, local: &mut [u8]) -> Result<(), TransportError> {
        self.check_remote_access(peer, remote, offset, local.len(), "read")?;
        self.copy_in_chunks(local.len(), "process_vm_readv", remote.pid, |done, chunk| cma::read_remote(remote.pid, remote.address + offset + done as u64, &mut local[done..done + chunk]))
    }

    fn remote_write(&mut self, peer: PeerId, remote: RemoteRegion, offset: u64, local: &[u8]) -> Result<(), TransportError> {
        self.check_remote_access(peer, remote, offset, local.len(), "write")?;
        self.copy_in_chunks(local.len(), "process_vm_writev", remote.pid, |done, chunk| cma::write_remote(remote.pid, remote.address + offset + done as u64, &local[done..done + chunk]))
    }

    fn offer_share(&mut self, peer: PeerId) -> Option<u64> {
        if !self.cma {
            return None;
        }
        let inbound = self.inbound.iter_mut().find(|inbound| inbound.peer == peer)?;
        inbound.share_token += 1;
        inbound.consumer.ring().offer_share(inbound.share_token);
        Some(inbound.share_token)
    }

    fn claim_share(&mut self, peer: PeerId, token: u64) -> bool {
        let local = self.local_of(peer).filter(|_| peer != self.rank);
        match local.and_then(|local| self.outbound[local].as_ref()) {
            Some(outbound) => outbound.producer.ring().claim_share(token),
            None => false,
        }
    }

    fn revoke_share(&mut self, peer: PeerId, token: u64) -> bool {
        match self.inbound.iter().find(|inbound| inbound.peer == peer) {
            Some(inbound) => inbound.consumer.ring().revoke_share(token),
            None => true,
        }
    }

    fn prepare_sleep(&mut self) -> Option<u32> {
        self.own_segment().map(|segment| segment.doorbell().prepare_sleep())
    }

    fn sleep(&mut self, token: u32, timeout: std::time::Duration) {
        if let Some(segment) = self.own_segment() {
            segment.doorbell().sleep(token, timeout);
        }
    }

    fn finish_sleep(&mut self) {
        if let Some(segment) = self.own_segment() {
            segment.doorbell().finish_sleep();
        }
    }

    fn shared_doorbell(&self) -> Option<Arc<dyn SharedDoorbell>> {
        self.own_segment().map(|segment| Arc::clone(segment) as Arc<dyn SharedDoorbell>)
    }

    fn ring_own_doorbell(&self) {
        if let Some(segment) = self.own_segment() {
            segment.doorbell().ring();
        }
    }

    fn ring_peer(&self, peer: PeerId) {
        if let Some(segment) = self.local_of(peer).filter(|_| peer != self.rank).and_then(|local| self.segments.get(local)) {
            segment.doorbell().ring();
        }
    }

    fn peer_asleep(&self, peer: PeerId) -> bool {
        match self.local_of(peer) {
            Some(local) if peer != self.rank => self.segments.get(local).is_some_and(|segment| segment.doorbell().is_sleeping()),
            _ => false,
        }
    }

    fn ended_peer(&self) -> Option<(PeerId, String)> {
        let (watch, ranks) = self.watch.as_ref()?;
        let index = watch.ended()?;
        Some((ranks[index], format!("its process (pid {}) ended", watch.pid(index))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kernel_refusal_means_fall_back() {
        assert_eq!(remote_access_error(io::Error::from_raw_os_error(libc::EPERM), "process_vm_writev", 7), TransportError::RemoteAccessRefused);
        assert!(matches!(remote_access_error(io::Error::from_raw_os_error(libc::ESRCH), "process_vm_readv", 7), TransportError::System(reason) if reason.contains("pid 7")));
    }

    #[test]
    fn ring_slots_skip_the_receiver() {
        assert_eq!((0..4).filter(|&s| s != 2).map(|s| ring_slot(s, 2)).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(ring_slot(1, 0), 0);
    }
}
