//! Non-blocking file I/O (MPI_File_iread_at and the other `i` calls): the system calls run on a
//! helper thread of the process while the program computes. Each operation is a ticket the
//! helper fills in and then wakes the rank's waiter (a rank asleep in MPI_Wait on it); a
//! progress agent ([`TicketWatch`]) turns a filled-in ticket into the request's completion,
//! unpacking what a read brought into the program's buffer.

use std::collections::VecDeque;
use std::ffi::c_int;
use std::rc::Rc;
use std::sync::{Arc, Condvar, Mutex, OnceLock};

use braid_engine::{Engine, EngineError, ProgressAgent, Waker};

use crate::coll::drive::Outcome;

/// What an operation ended with: bytes moved, or an MPI error class and why.
pub(crate) type Ended = Result<(u64, Vec<u8>), (c_int, String)>;

/// One operation handed to the helper.
pub(crate) struct Ticket {
    ended: Mutex<Option<Ended>>,
}

impl Ticket {
    fn take(&self) -> Option<Ended> {
        self.ended.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
}

type Job = Box<dyn FnOnce() -> Ended + Send>;

struct Queue {
    jobs: Mutex<VecDeque<(Job, Arc<Ticket>, Waker)>>,
    ready: Condvar,
}

/// The helper thread, started at the first non-blocking operation of the process.
fn queue() -> &'static Arc<Queue> {
    static QUEUE: OnceLock<Arc<Queue>> = OnceLock::new();
    QUEUE.get_or_init(|| {
        let queue = Arc::new(Queue { jobs: Mutex::new(VecDeque::new()), ready: Condvar::new() });
        let served = Arc::clone(&queue);
        // If the thread cannot start, jobs run where they are submitted (see `submit`).
        let _ = std::thread::Builder::new().name("braid-file-io".into()).spawn(move || serve(&served));
        queue
    })
}

fn serve(queue: &Queue) {
    loop {
        let (job, ticket, waker) = {
            let mut jobs = queue.jobs.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            loop {
                if let Some(next) = jobs.pop_front() {
                    break next;
                }
                jobs = queue.ready.wait(jobs).unwrap_or_else(|poisoned| poisoned.into_inner());
            }
        };
        let ended = job();
        *ticket.ended.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(ended);
        waker.wake();
    }
}

/// Runs `job` on the helper thread; `waker` wakes the rank once it has ended.
pub(crate) fn submit(job: impl FnOnce() -> Ended + Send + 'static, waker: Waker) -> Arc<Ticket> {
    let ticket = Arc::new(Ticket { ended: Mutex::new(None) });
    let queue = queue();
    queue.jobs.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push_back((Box::new(job), Arc::clone(&ticket), waker));
    queue.ready.notify_one();
    ticket
}

/// Hands the bytes a read brought to the program's buffer.
pub(crate) type Delivery = Box<dyn FnOnce(&[u8]) -> Result<usize, c_int>>;

/// What happens on the rank once the ticket is filled in: for a read, the bytes it brought are
/// handed to `deliver` (which unpacks them into the program's buffer) before the request
/// completes with their count.
pub(crate) struct TicketWatch {
    pub ticket: Arc<Ticket>,
    pub outcome: Rc<Outcome>,
    pub deliver: Option<Delivery>,
}

impl ProgressAgent for TicketWatch {
    fn advance(&mut self, _engine: &mut Engine) -> Result<bool, EngineError> {
        if self.outcome.result().is_some() {
            return Ok(false);
        }
        let Some(ended) = self.ticket.take() else { return Ok(false) };
        match ended {
            Ok((count, bytes)) => match self.deliver.take().map(|deliver| deliver(&bytes)) {
                None => self.outcome.finish_counted(Ok(()), count as usize),
                Some(Ok(delivered)) => self.outcome.finish_counted(Ok(()), delivered),
                Some(Err(class)) => self.outcome.finish_counted(Err(class), 0),
            },
            Err((class, _)) => self.outcome.finish_counted(Err(class), 0),
        }
        Ok(true)
    }

    fn is_done(&self) -> bool {
        self.outcome.result().is_some()
    }
}
