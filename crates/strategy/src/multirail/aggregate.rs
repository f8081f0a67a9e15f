//! Aggregation of small eager frames for one peer (Brunet, Trahay and Denis 2008, section III-D): while the rail
//! that carries them is busy, frames wait and leave together in one packet once it frees up or
//! the packet is full. Pure bookkeeping: the engine keeps the bytes and follows the decisions.

/// What the engine does with an eager frame it offers to the [`Aggregator`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Send the frame now, on its own: nothing is waiting and the rail is idle, or the frame
    /// alone fills a packet.
    SendAlone,
    /// The frame joins the pending packet, which keeps waiting for the rail.
    Hold,
    /// The frame joins the pending packet, which is now due (the rail is idle or the packet is
    /// full): send the packet and call [`Aggregator::flush`].
    HoldAndFlush,
    /// The pending packet must leave before this frame (the frame does not fit in it): send
    /// the packet, call [`Aggregator::flush`], then offer the frame again. Order is kept.
    FlushFirst,
}

/// The frames and bytes of one aggregated packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Batch {
    pub frames: usize,
    pub bytes: usize,
}

/// Aggregation state for one peer.
#[derive(Debug, Clone)]
pub struct Aggregator {
    budget: usize,
    pending: Batch,
}

impl Aggregator {
    /// An aggregator whose packets carry at most `budget` bytes (frame headers included).
    pub fn new(budget: usize) -> Aggregator {
        Aggregator { budget: budget.max(1), pending: Batch::default() }
    }

    /// Offers a `len`-byte frame (header included) while the rail is idle or busy.
    #[inline]
    pub fn push(&mut self, len: usize, rail_idle: bool) -> Decision {
        if self.pending.frames == 0 {
            if rail_idle || len >= self.budget {
                return Decision::SendAlone;
            }
        } else if self.pending.bytes + len > self.budget {
            return Decision::FlushFirst;
        }
        self.pending.frames += 1;
        self.pending.bytes += len;
        if rail_idle || self.pending.bytes >= self.budget {
            Decision::HoldAndFlush
        } else {
            Decision::Hold
        }
    }

    /// The rail has become idle: whether a packet is waiting to be sent (then call `flush`).
    #[inline]
    pub fn due_on_idle(&self) -> bool {
        self.pending.frames > 0
    }

    /// What is pending, without taking it.
    pub fn pending(&self) -> Batch {
        self.pending
    }

    /// Takes the pending packet (the engine sends it now).
    pub fn flush(&mut self) -> Batch {
        std::mem::take(&mut self.pending)
    }
}
