//! The progress step (poll every transport and the rails once, advance the protocols that run
//! over many steps, then the progress agents) and the wait loop around it, with its
//! [`WaitPolicy`]: spin, yield the core, or sleep on a doorbell: the one every peer rings (a
//! single direct transport's), or every rail's at once.

use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_config::WaitMode;

use braid_lane::PeerId;
use braid_transport::{Incoming, SharedDoorbell, Sink};

use crate::frame::NetFrame;
use crate::{Core, Engine, EngineError};

/// What one rail's `poll` hands its frames to: the engine, which also says where a NET_DATA
/// chunk's payload goes, so that the transport receives it there.
struct RailSink<'a> {
    core: &'a mut Core,
    rail: usize,
}

impl Sink for RailSink<'_> {
    fn deliver(&mut self, incoming: Incoming<'_>) {
        self.core.counters.rail_frame_received(self.rail, incoming.payload.len());
        if self.core.debug && matches!(NetFrame::decode(incoming.header), Some(NetFrame::Data { .. })) {
            self.core.rail_arrivals.note(self.rail, incoming.payload.len());
        }
        self.core.on_frame(incoming)
    }

    fn place(&mut self, peer: PeerId, header: &[u8], len: usize) -> Option<&mut [u8]> {
        self.core.place_rail_data(peer, header, len)
    }

    fn placed(&mut self, peer: PeerId, header: &[u8], len: usize) {
        self.core.counters.rail_frame_received(self.rail, len);
        self.core.counters.rail_bytes_placed(len);
        if self.core.debug {
            self.core.rail_arrivals.note(self.rail, len);
        }
        self.core.on_placed(peer, header, len)
    }
}

/// When a waiter spins, yields its core or sleeps.
pub(crate) struct WaitPolicy {
    pub(crate) mode: WaitMode,
    pub(crate) spin_count: u32,
    /// Oversubscribed node: how long a waiter yields its core before it sleeps.
    pub(crate) yield_window: Duration,
    /// A waiter on the rails: how long it spins before it sleeps on their doorbells.
    pub(crate) rail_spin_window: Duration,
    /// A waiter on the rails that sent a control frame over them lately: how long after that
    /// frame it stays awake, yielding its core once `rail_spin_window` is over (see
    /// `Network::reply_spin`).
    pub(crate) reply_spin_window: Duration,
    pub(crate) timeout: Duration,
    pub(crate) oversubscribed: bool,
    pub(crate) doorbell: Doorbell,
}

/// What a waiter sleeps on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Doorbell {
    /// Nothing: it keeps polling, yielding its core between polls.
    None,
    /// The doorbell of the one direct transport every peer rings (the shared-memory futex).
    Direct(usize),
    /// Every rail's doorbell at once, for as long as the rails allow. `bounded`: direct
    /// transports carry traffic too, and their doorbell cannot join the rails' (a futex is no
    /// descriptor), so each sleep lasts at most [`MIXED_SLEEP_MAX`] and they are polled between.
    Rails { bounded: bool },
}

/// The direct transports' doorbells armed for a sleep: `(transport, doorbell, token)`.
pub(crate) struct ArmedDoorbells(Vec<(usize, Arc<dyn SharedDoorbell>, u32)>);

impl ArmedDoorbells {
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sleeps until any of them rings or `timeout` passes.
    pub(crate) fn sleep(&self, timeout: Duration) {
        match self.0.as_slice() {
            [(_, doorbell, token)] => doorbell.sleep(*token, timeout),
            several => {
                let futexes: Vec<(&braid_sys::futex::Doorbell, u32)> = several.iter().filter_map(|(_, doorbell, token)| doorbell.futex().map(|futex| (futex, *token))).collect();
                braid_sys::futex::Doorbell::sleep_any(&futexes, timeout);
            }
        }
    }
}

/// Longest sleep on the rails of a rank that also has direct (shared-memory) peers: how late
/// a frame from those may be seen once the rank has gone to sleep.
pub(crate) const MIXED_SLEEP_MAX: Duration = Duration::from_micros(100);

/// A sleep shorter than this is not worth its system calls (and the wake-up): yield instead.
const SLEEP_MIN: Duration = Duration::from_micros(20);

/// What a waiter on the rails does next (see [`Engine::rails_sleep`]).
pub(crate) enum RailSleep {
    /// Sleeps on their doorbells for at most this long.
    For(Duration),
    /// Yields its core: direct lanes need polling, or the rails need the rank too soon.
    Yield,
    /// Polls again at once: it has just sent what it held back.
    PollAgain,
}

/// What a waiter does after an unsuccessful poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Idle {
    Spin,
    Yield,
    Block,
}

impl WaitPolicy {
    /// How long a waiter stays awake (spinning or yielding) before it sleeps, as
    /// [`WaitPolicy::after_idle_poll`] decides: a collective's cost model charges a wake-up only
    /// to waits longer than this. `Duration::MAX` where waiters never sleep.
    pub(crate) fn awake_before_sleep(&self) -> Duration {
        match self.mode {
            WaitMode::Poll => Duration::MAX,
            WaitMode::Block => Duration::ZERO,
            WaitMode::Auto if self.oversubscribed => self.yield_window,
            // A rank sends, then waits for the answer: awake for the reply window.
            WaitMode::Auto if matches!(self.doorbell, Doorbell::Rails { .. }) => self.rail_spin_window.max(self.reply_spin_window),
            // A few polls: next to nothing.
            WaitMode::Auto => Duration::ZERO,
        }
    }

    /// What to do after `idle_polls` unsuccessful polls, `idle_for` since the first of them;
    /// `bulk_on_rails`: a rendezvous is moving over the rails (chunks to send or to receive);
    /// `reply_due`: how long after this wait began the answer to this rank's last frame over the
    /// rails is due (zero: none is), which a waiter on the rails stays awake for.
    pub(crate) fn after_idle_poll(&self, idle_polls: u32, bulk_on_rails: bool, reply_due: Duration, idle_for: impl FnOnce() -> Duration) -> Idle {
        match self.mode {
            WaitMode::Poll => Idle::Spin,
            WaitMode::Block => Idle::Block,
            // Sleeping at once would make every hop wake an idle core (tens of microseconds on
            // this VM); yielding hands the core to the rank that holds the work, and the sleep
            // that follows keeps a long wait from burning CPU.
            WaitMode::Auto if self.oversubscribed => {
                if idle_for() < self.yield_window {
                    Idle::Yield
                } else {
                    Idle::Block
                }
            }
            WaitMode::Auto if matches!(self.doorbell, Doorbell::Rails { .. }) => {
                // A rails poll costs a system call per rail (a shared-memory poll a few loads), so
                // `BRAID_SPIN_COUNT` polls there would spin for tens of milliseconds, longer than a
                // streaming rank is ever idle, taking the CPU the kernel's packet work needs.
                // While a rendezvous moves, what the rank waits for is the next packets of a chunk
                // or room in a socket, which the doorbell reports: spinning for them would take
                // the CPU those packets need, to save a wake-up that is small beside a chunk.
                if bulk_on_rails || idle_polls >= self.spin_count {
                    return Idle::Block;
                }
                let idle_for = idle_for();
                if idle_for < self.rail_spin_window {
                    Idle::Spin
                } else if idle_for < reply_due {
                    // Waiting for an answer: awake, but handing the core to whoever else is
                    // runnable on it (the peer that answers may be).
                    Idle::Yield
                } else {
                    Idle::Block
                }
            }
            WaitMode::Auto => {
                if idle_polls < self.spin_count {
                    Idle::Spin
                } else {
                    Idle::Block
                }
            }
        }
    }
}

impl Core {
    /// Frames, copies or chunks still to move (finalize waits for them).
    pub(crate) fn has_local_work(&self) -> bool {
        self.has_direct_work() || self.net.has_work()
    }

    /// Work on the direct lanes that only polling moves on: frames in the backlogs, streams,
    /// single-copy reads and writes.
    #[inline]
    fn has_direct_work(&self) -> bool {
        self.backlog_len != 0 || !self.streams.is_empty() || !self.reads.is_empty() || !self.writes.is_empty()
    }

    /// Polls every rail once; a rail's frames are counted per rail (the others per peer, by the
    /// frame handlers). A rendezvous chunk's payload may be received straight into the receive
    /// buffer ([`RailSink`]).
    #[inline(never)]
    pub(crate) fn poll_rails(&mut self) -> usize {
        let mut links = self.net.lend_links();
        let mut delivered = 0;
        for (rail, link) in links.iter_mut().enumerate() {
            delivered += link.poll_placing(&mut RailSink { core: self, rail });
        }
        self.net.return_links(links);
        delivered
    }

    /// Whether any protocol needs a progress step beyond polling for frames.
    #[inline]
    pub(crate) fn has_protocol_work(&self) -> bool {
        self.has_direct_work() || self.net.active()
    }
}

impl Engine {
    /// Makes progress until `done(self)` is true, waiting per the wait policy between polls.
    pub fn wait_until(&mut self, mut done: impl FnMut(&mut Engine) -> bool) -> Result<(), EngineError> {
        // Frames waiting to be aggregated leave now: nothing more joins them while we wait.
        if self.core.net.has_unsent() {
            let flushed = self.core.net.flush_unsent();
            self.core.complete_sent_controls();
            flushed?;
        }
        let mut idle_polls: u32 = 0;
        let mut idle_since: Option<Instant> = None;
        let mut reply_due = Duration::ZERO;
        loop {
            if done(self) {
                return Ok(());
            }
            if self.progress()? {
                idle_polls = 0;
                idle_since = None;
                reply_due = Duration::ZERO;
                continue;
            }
            idle_polls = idle_polls.saturating_add(1);
            let bulk = self.core.net.moving_bulk();
            if idle_since.is_none() && matches!(self.wait.doorbell, Doorbell::Rails { .. }) && !bulk {
                let now = Instant::now();
                idle_since = Some(now);
                reply_due = self.core.net.reply_spin(now, self.wait.reply_spin_window);
            }
            let idle = self.wait.after_idle_poll(idle_polls, bulk, reply_due, || idle_since.get_or_insert_with(Instant::now).elapsed());
            // A look at the node's other processes now and then: before each sleep, and every
            // so many polls of a waiter that never sleeps.
            if (idle == Idle::Block || idle_polls & 1023 == 0) && self.peer_watch.due(Instant::now()) {
                let ended = self.transports.iter().find_map(|transport| transport.ended_peer());
                self.peer_watch.judge(ended)?;
                self.peer_watch.judge_parent(braid_sys::process::parent_pid())?;
            }
            match idle {
                Idle::Spin => continue,
                Idle::Yield => {
                    self.core.counters.time_blocked(std::thread::yield_now);
                    continue;
                }
                Idle::Block => {}
            }
            let sleeper = match self.wait.doorbell {
                // Doorbells of processes of other jobs, or their sockets (the rails' sleeps are
                // bounded when there are any).
                Doorbell::Direct(_) | Doorbell::None if !self.joined_doorbells.is_empty() || !self.joined_sockets.is_empty() => {
                    self.sleep_on_several(&mut done)?;
                    continue;
                }
                Doorbell::Direct(transport) => Some(transport).filter(|_| !self.core.has_local_work()),
                Doorbell::Rails { bounded } => {
                    self.sleep_on_rails(bounded)?;
                    continue;
                }
                Doorbell::None => None,
            };
            let Some((sleeper, token)) = sleeper.and_then(|t| self.transports[t].prepare_sleep().map(|token| (t, token))) else {
                self.core.counters.time_blocked(std::thread::yield_now);
                continue;
            };
            // The doorbell is armed: anything arriving from now on wakes us, so one more look
            // closes the window between the last poll and the sleep.
            let polled = self.progress();
            if matches!(polled, Ok(false)) && !done(self) {
                self.core.counters.time_asleep(|| self.transports[sleeper].sleep(token, self.wait.timeout));
            }
            self.transports[sleeper].finish_sleep();
            polled?;
        }
    }

    /// Sleeps on the doorbells of the first direct transport and of those that reach processes
    /// of other jobs (see `joining.rs`) at once, unless a direct lane needs polling. With network
    /// transports to processes of other jobs too: on the doorbells for at most
    /// [`MIXED_SLEEP_MAX`] (a futex and a socket cannot be slept on together), or on the sockets'
    /// descriptors when there is no doorbell.
    fn sleep_on_several(&mut self, done: &mut impl FnMut(&mut Engine) -> bool) -> Result<(), EngineError> {
        if self.core.has_local_work() {
            self.core.counters.time_blocked(std::thread::yield_now);
            return Ok(());
        }
        let armed = self.arm_direct_doorbells();
        // Armed (sockets need no arming): one more look closes the window before the sleep.
        let polled = self.progress();
        if matches!(polled, Ok(false)) && !done(self) {
            let timeout = self.wait.timeout;
            if !armed.is_empty() {
                let bounded = if self.joined_sockets.is_empty() { timeout } else { timeout.min(MIXED_SLEEP_MAX) };
                self.core.counters.time_asleep(|| armed.sleep(bounded));
            } else {
                let Engine { transports, joined_sockets, core, .. } = self;
                let descriptors: Vec<_> = joined_sockets.iter().filter_map(|&index| transports[index].doorbell()).collect();
                core.counters.time_asleep(|| braid_sys::fd::poll_readable(&descriptors, Some(timeout)).map(|_| ()).unwrap_or(()));
            }
        }
        self.disarm(&armed);
        polled.map(|_| ())
    }

    /// Arms the doorbell of every direct transport a waiter sleeps on.
    pub(crate) fn arm_direct_doorbells(&mut self) -> ArmedDoorbells {
        let Doorbell::Direct(first) = self.wait.doorbell else { return ArmedDoorbells(Vec::new()) };
        let mut armed = Vec::with_capacity(1 + self.joined_doorbells.len());
        for transport in std::iter::once(first).chain(self.joined_doorbells.iter().copied()) {
            let Some(doorbell) = self.transports[transport].shared_doorbell() else { continue };
            if let Some(token) = self.transports[transport].prepare_sleep() {
                armed.push((transport, doorbell, token));
            }
        }
        ArmedDoorbells(armed)
    }

    /// Ends the sleep phase of doorbells armed by [`Engine::arm_direct_doorbells`].
    pub(crate) fn disarm(&mut self, armed: &ArmedDoorbells) {
        for (transport, ..) in &armed.0 {
            self.transports[*transport].finish_sleep();
        }
    }

    /// Sleeps on every rail's doorbell for as long as the rails allow (a frame arriving, or room
    /// in a socket the rank waits for, ends it), unless work on a direct lane needs polling.
    /// No arming is needed: the doorbells are level-triggered, so what arrived since the last
    /// poll ends the sleep at once.
    fn sleep_on_rails(&mut self, bounded: bool) -> Result<(), EngineError> {
        match self.rails_sleep(bounded)? {
            RailSleep::For(timeout) => {
                let Core { counters, net, .. } = &mut self.core;
                counters.time_asleep(|| net.sleep(timeout));
            }
            RailSleep::Yield => self.core.counters.time_blocked(std::thread::yield_now),
            RailSleep::PollAgain => {}
        }
        Ok(())
    }

    /// Whether and how long a waiter may sleep on the rails now (see [`Engine::sleep_on_rails`]).
    pub(crate) fn rails_sleep(&mut self, bounded: bool) -> Result<RailSleep, EngineError> {
        let core = &mut self.core;
        if core.has_direct_work() {
            return Ok(RailSleep::Yield);
        }
        // Before a long sleep: a peer whose every rail has gone (noticed on an idle link by the
        // keepalive) will never send what a receive waits for.
        core.net.check_awaited(core.matching.awaited_sources())?;
        // Frames held for aggregation would wait for the whole sleep.
        if core.net.has_unsent() {
            let flushed = core.net.flush_unsent();
            core.complete_sent_controls();
            if flushed? {
                return Ok(RailSleep::PollAgain);
            }
        }
        let mut timeout = self.wait.timeout;
        if bounded {
            timeout = timeout.min(MIXED_SLEEP_MAX);
        }
        if let Some(limit) = core.net.sleep_limit() {
            timeout = timeout.min(limit);
        }
        if timeout < SLEEP_MIN {
            return Ok(RailSleep::Yield);
        }
        Ok(RailSleep::For(timeout))
    }

    /// Makes progress, waiting per the wait policy, until `poll` finds what it looks for (a probed
    /// message, for one) or fails.
    pub fn wait_for<T>(&mut self, mut poll: impl FnMut(&mut Engine) -> Result<Option<T>, EngineError>) -> Result<T, EngineError> {
        let mut outcome = None;
        // `wait_until` may ask again after an answer (its last look before a sleep): the poll
        // is not repeated then, as what it found may be gone (a finished schedule).
        self.wait_until(|engine| {
            if outcome.is_none() {
                outcome = poll(engine).transpose();
            }
            outcome.is_some()
        })?;
        outcome.expect("the wait ends once the poll has an answer")
    }

    /// Polls every transport once and advances protocols; true if anything happened.
    #[inline]
    pub fn progress(&mut self) -> Result<bool, EngineError> {
        let moved = self.progress_step()?;
        self.moved_steps += u64::from(moved);
        Ok(moved)
    }

    /// How many progress steps have moved something so far: a thread that sees this unchanged
    /// across its own call knows the call changed nothing another thread waits for.
    pub fn moved_steps(&self) -> u64 {
        self.moved_steps
    }

    #[inline]
    fn progress_step(&mut self) -> Result<bool, EngineError> {
        let mut delivered = 0;
        let core = &mut self.core;
        for &index in &self.polled {
            delivered += self.transports[index].poll(&mut |incoming| core.on_frame(incoming));
        }
        if self.polls_rails {
            delivered += core.poll_rails();
            // A rail that failed over (in the last step's protocol work or a wait) is an event.
            if core.net.has_failovers() {
                crate::events::set_pending(true);
            }
        }
        if self.core.failure.is_some() {
            return Err(self.take_failure());
        }
        let mut moved = delivered > 0;
        if self.core.has_protocol_work() {
            moved = self.advance_protocols(moved)?;
        }
        if !self.agents.is_empty() {
            return self.advance_agents(moved);
        }
        Ok(moved)
    }

    /// Advances the protocols that run over many progress steps (copies, backlogs, pipelines,
    /// the rails); kept out of [`Engine::progress`] so that a step with nothing of the kind stays
    /// short.
    #[inline(never)]
    fn advance_protocols(&mut self, mut moved: bool) -> Result<bool, EngineError> {
        if !self.core.reads.is_empty() {
            // Offers leave before the first read, so that the sender's part runs alongside.
            if self.offer_shares() {
                moved |= self.flush_backlogs()?;
            }
            moved |= self.advance_reads()?;
        }
        if !self.core.writes.is_empty() {
            moved |= self.advance_writes()?;
        }
        if self.core.backlog_len != 0 {
            moved |= self.flush_backlogs()?;
        }
        if !self.core.streams.is_empty() {
            moved |= self.advance_streams()?;
        }
        if self.core.net.active() {
            let advanced = self.core.net.advance(!moved);
            self.core.complete_sent_controls();
            moved |= advanced?;
        }
        Ok(moved)
    }

    #[cold]
    fn take_failure(&mut self) -> EngineError {
        self.core.failure.take().unwrap_or(EngineError::BadRequest)
    }
}

#[cfg(test)]
mod wait_policy_tests {
    use super::*;

    fn policy(mode: WaitMode, oversubscribed: bool) -> WaitPolicy {
        WaitPolicy {
            mode,
            spin_count: 3,
            yield_window: Duration::from_micros(100),
            rail_spin_window: Duration::from_micros(20),
            reply_spin_window: Duration::ZERO,
            timeout: Duration::from_millis(1),
            oversubscribed,
            doorbell: Doorbell::Direct(1),
        }
    }

    #[test]
    fn a_dedicated_core_spins_then_blocks() {
        let auto = policy(WaitMode::Auto, false);
        assert_eq!(auto.after_idle_poll(2, false, Duration::ZERO, || Duration::ZERO), Idle::Spin);
        assert_eq!(auto.after_idle_poll(3, false, Duration::ZERO, || Duration::ZERO), Idle::Block);
    }

    #[test]
    fn an_oversubscribed_node_yields_for_the_window_then_blocks() {
        let auto = policy(WaitMode::Auto, true);
        assert_eq!(auto.after_idle_poll(1_000_000, false, Duration::ZERO, || Duration::from_micros(99)), Idle::Yield);
        assert_eq!(auto.after_idle_poll(1, false, Duration::ZERO, || Duration::from_micros(100)), Idle::Block);
        let no_window = WaitPolicy { yield_window: Duration::ZERO, ..policy(WaitMode::Auto, true) };
        assert_eq!(no_window.after_idle_poll(1, false, Duration::ZERO, || Duration::ZERO), Idle::Block);
    }

    #[test]
    fn a_waiter_stays_awake_for_its_yield_window_when_oversubscribed_and_never_when_told_to_block() {
        assert_eq!(policy(WaitMode::Auto, true).awake_before_sleep(), Duration::from_micros(100));
        assert_eq!(policy(WaitMode::Block, true).awake_before_sleep(), Duration::ZERO);
        assert_eq!(policy(WaitMode::Poll, false).awake_before_sleep(), Duration::MAX);
        assert_eq!(policy(WaitMode::Auto, false).awake_before_sleep(), Duration::ZERO);
    }

    #[test]
    fn a_waiter_on_the_rails_spins_only_briefly() {
        let rails = WaitPolicy { doorbell: Doorbell::Rails { bounded: false }, spin_count: 20_000, ..policy(WaitMode::Auto, false) };
        assert_eq!(rails.after_idle_poll(100, false, Duration::ZERO, || Duration::from_micros(5)), Idle::Spin);
        assert_eq!(rails.after_idle_poll(100, false, Duration::ZERO, || rails.rail_spin_window), Idle::Block);
        assert_eq!(rails.after_idle_poll(20_000, false, Duration::ZERO, || Duration::ZERO), Idle::Block);
        // Chunks in flight: it sleeps on the doorbells at once.
        assert_eq!(rails.after_idle_poll(1, true, Duration::ZERO, || Duration::ZERO), Idle::Block);
        // Only the rails' waiting cares; a shared-memory waiter spins as before.
        assert_eq!(policy(WaitMode::Auto, false).after_idle_poll(1, true, Duration::ZERO, || Duration::ZERO), Idle::Spin);
        assert_eq!(WaitPolicy { mode: WaitMode::Poll, ..rails }.after_idle_poll(100, false, Duration::ZERO, || Duration::MAX), Idle::Spin);
    }

    #[test]
    fn a_waiter_on_the_rails_that_just_sent_stays_awake_until_the_answer_is_due() {
        let rails = WaitPolicy { doorbell: Doorbell::Rails { bounded: false }, spin_count: 20_000, reply_spin_window: Duration::from_micros(200), ..policy(WaitMode::Auto, false) };
        let reply = Duration::from_micros(150);
        // Its own window spinning, then yielding its core until the answer is due.
        assert_eq!(rails.after_idle_poll(100, false, reply, || Duration::from_micros(10)), Idle::Spin);
        assert_eq!(rails.after_idle_poll(100, false, reply, || Duration::from_micros(100)), Idle::Yield);
        assert_eq!(rails.after_idle_poll(100, false, reply, || reply), Idle::Block);
        // A rendezvous in flight: the doorbell reports what it waits for.
        assert_eq!(rails.after_idle_poll(1, true, reply, || Duration::ZERO), Idle::Block);
        // The cost model's ranks stay awake for the reply window after a round's send.
        assert_eq!(rails.awake_before_sleep(), Duration::from_micros(200));
        assert_eq!(WaitPolicy { reply_spin_window: Duration::ZERO, ..rails }.awake_before_sleep(), Duration::from_micros(20));
    }

    #[test]
    fn forced_modes_ignore_the_node() {
        assert_eq!(policy(WaitMode::Poll, true).after_idle_poll(u32::MAX, false, Duration::ZERO, || Duration::MAX), Idle::Spin);
        assert_eq!(policy(WaitMode::Block, false).after_idle_poll(1, false, Duration::ZERO, || Duration::ZERO), Idle::Block);
    }
}
