//! Sleeping outside the engine, for a waiting thread of a process whose other threads keep
//! calling into it (MPI_THREAD_MULTIPLE): the thread arms this rank's doorbell under the engine
//! ([`Engine::park`]), sleeps on it without holding the engine ([`Parking::sleep`]), then hands
//! it back ([`Engine::unpark`]). Peers ring that doorbell as they ring a single-threaded rank's;
//! the process's other threads ring it ([`Engine::wake_parked`]) when what they did may be what
//! the sleeper waits for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use braid_config::WaitMode;

use crate::progress::{ArmedDoorbells, Doorbell, RailSleep, MIXED_SLEEP_MAX};
use crate::rails::RailDoorbells;
use crate::{Engine, EngineError};

/// A doorbell armed by [`Engine::park`], to sleep on without the engine.
pub struct Parking {
    spot: Spot,
    timeout: Duration,
}

enum Spot {
    /// The direct transports' doorbells (see [`Engine::arm_direct_doorbells`]).
    Direct(ArmedDoorbells),
    /// Nothing that another thread can ring: a short nap (network transports to processes of
    /// other jobs, and no direct doorbell).
    Nap,
    /// Every rail's doorbell, planned to be back by `until`.
    Rails { doorbells: Arc<RailDoorbells>, until: Instant },
}

impl Parking {
    /// Sleeps until the doorbell rings, another thread wakes it, or the engine's longest sleep
    /// passes.
    pub fn sleep(&self) {
        match &self.spot {
            Spot::Direct(armed) => armed.sleep(self.timeout),
            Spot::Nap => std::thread::sleep(self.timeout),
            Spot::Rails { doorbells, .. } => doorbells.sleep(self.timeout),
        }
    }
}

/// Wakes a rank's waiter from any thread (see [`Engine::waker`]); a waiter that sleeps on
/// nothing polls, and needs no waking.
#[derive(Clone)]
pub struct Waker(Option<Ringing>);

#[derive(Clone)]
enum Ringing {
    Doorbell(Arc<dyn braid_transport::SharedDoorbell>),
    Rails(Arc<RailDoorbells>),
}

impl Waker {
    pub fn wake(&self) {
        match &self.0 {
            Some(Ringing::Doorbell(doorbell)) => {
                if let Some(futex) = doorbell.futex() {
                    futex.ring();
                }
            }
            Some(Ringing::Rails(doorbells)) => doorbells.wake(),
            None => {}
        }
    }
}

impl Engine {
    /// How long a waiting thread stays awake (polling, yielding its core) before it parks, as a
    /// single-threaded waiter would; `None` when waiters never sleep (`BRAID_WAIT=poll`).
    pub fn park_after(&self) -> Option<Duration> {
        match self.wait.mode {
            WaitMode::Poll => None,
            _ => Some(self.wait.awake_before_sleep()),
        }
    }

    /// The longest single sleep of a waiter (`BRAID_BLOCK_TIMEOUT_MS`).
    pub fn sleep_timeout(&self) -> Duration {
        self.wait.timeout
    }

    /// Arms this rank's doorbell for a thread that will sleep on it without the engine: whatever
    /// arrives from now on rings it, so the caller tests its condition once more (with progress)
    /// before it sleeps. `Ok(None)`: no sleep now (work on a lane needs polling, or nothing here
    /// can wake a sleeper).
    pub fn park(&mut self) -> Result<Option<Parking>, EngineError> {
        if self.park_after().is_none() {
            return Ok(None);
        }
        // Sockets to processes of other jobs are polled between short sleeps.
        let sockets = !self.joined_sockets.is_empty();
        Ok(Some(match self.wait.doorbell {
            Doorbell::Direct(_) | Doorbell::None if sockets => {
                if self.core.has_local_work() {
                    return Ok(None);
                }
                let armed = self.arm_direct_doorbells();
                let spot = if armed.is_empty() { Spot::Nap } else { Spot::Direct(armed) };
                Parking { spot, timeout: MIXED_SLEEP_MAX }
            }
            Doorbell::Direct(_) => {
                if self.core.has_local_work() {
                    return Ok(None);
                }
                let armed = self.arm_direct_doorbells();
                if armed.is_empty() {
                    return Ok(None);
                }
                Parking { spot: Spot::Direct(armed), timeout: self.wait.timeout }
            }
            Doorbell::Rails { bounded } => {
                let RailSleep::For(timeout) = self.rails_sleep(bounded)? else { return Ok(None) };
                let Some(doorbells) = self.core.net.shared_doorbells() else { return Ok(None) };
                Parking { spot: Spot::Rails { doorbells, until: Instant::now() + timeout }, timeout }
            }
            Doorbell::None => return Ok(None),
        }))
    }

    /// Takes back a doorbell armed by [`Engine::park`], once its sleep (`slept` long) is over.
    pub fn unpark(&mut self, parking: Parking, slept: Duration) {
        match parking.spot {
            Spot::Direct(armed) => self.disarm(&armed),
            Spot::Nap => {}
            Spot::Rails { until, .. } => self.core.net.slept_until(until),
        }
        if !slept.is_zero() {
            self.core.counters.add_asleep(slept);
        }
    }

    /// What a thread outside MPI (a helper finishing work a request waits for) rings to wake
    /// this rank's waiter: the doorbell it sleeps on.
    pub fn waker(&self) -> Waker {
        Waker(match self.wait.doorbell {
            Doorbell::Direct(transport) => self.transports[transport].shared_doorbell().map(Ringing::Doorbell),
            Doorbell::Rails { .. } => self.core.net.shared_doorbells().map(Ringing::Rails),
            Doorbell::None => None,
        })
    }

    /// Wakes a thread of this process parked on this rank's doorbell (a no-op when none is).
    pub fn wake_parked(&self) {
        match self.wait.doorbell {
            Doorbell::Direct(transport) => self.transports[transport].ring_own_doorbell(),
            Doorbell::Rails { .. } => self.core.net.wake_sleeper(),
            Doorbell::None => {}
        }
    }
}
