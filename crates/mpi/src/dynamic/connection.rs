//! The collective part of connecting two jobs (MPI_Comm_accept and MPI_Comm_connect, and so
//! MPI_Comm_spawn and MPI_Comm_join): the root of each side has met the other side's root
//! ([`super::rendezvous`]) and shares the outcome with its side; then every process of both
//! sides joins the group's key-value space, the engine numbers and connects the processes it
//! did not know ([`braid_engine::Engine::join`]), and all agree there on the context ids of the
//! intercommunicator between the two sides.

use std::ffi::c_int;
use std::sync::Arc;

use braid_pmi::Bootstrap;

use super::reachable::Reachable;
use super::rendezvous::Meeting;
use crate::coll::algorithms;
use crate::comm::construct::install;
use crate::comm::ids::{self, Report};
use crate::comm::{Agreement, Comm, CommShared};
use crate::consts::*;
use crate::error::{error, MpiError, MpiResult};
use crate::group::Members;
use crate::runtime::{self, engine_error};

/// Which side of a connection this process is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Accepting,
    Connecting,
}

/// Where the calling process stands in `comm`, an intracommunicator whose rank `root` meets the
/// other side: its rank, the communicator's size, and how long the sides wait for each other.
/// `what` says what is made from an intercommunicator, which is refused.
pub(crate) fn this_side(comm: MPI_Comm, root: c_int, what: &str) -> MpiResult<(u32, u32, std::time::Duration)> {
    let (rank, size, timeout) = runtime::with(|rt| {
        let found = rt.comms.get(comm)?;
        if found.shared.is_inter() {
            return Err(error(comm, MPI_ERR_COMM, format!("{what} from an intracommunicator")));
        }
        Ok((found.shared.rank, found.shared.size() as u32, std::time::Duration::from_secs(rt.config.connect_timeout_s.into())))
    })?;
    if !(0..size as c_int).contains(&root) {
        return Err(error(comm, MPI_ERR_ROOT, format!("root {root} is not a rank of a communicator of size {size}")));
    }
    Ok((rank, size, timeout))
}

/// Longest group address a root shares.
const ADDRESS_MAX: usize = 200;

/// Collective over `comm` (an intracommunicator): the root's outcome of meeting the other
/// side's root (`at_root`, given on the root only) reaches every member, and every member joins
/// the other side; returns the intercommunicator. A failure at the root fails every member,
/// with the root's error class.
pub(crate) fn connect_sides(comm: MPI_Comm, root: c_int, side: Side, at_root: Option<MpiResult<Meeting>>) -> MpiResult<MPI_Comm> {
    let (shared, errhandler, tuning) = runtime::with(|rt| {
        let found = rt.comms.get(comm)?;
        Ok((found.shared.clone(), found.errhandler, rt.tuning))
    })?;
    let mut root_error = None;
    let mut words = [0u8; 16 + ADDRESS_MAX];
    match at_root {
        Some(Ok(meeting)) if meeting.address.len() <= ADDRESS_MAX => {
            words[4..8].copy_from_slice(&meeting.accepting.to_le_bytes());
            words[8..12].copy_from_slice(&meeting.connecting.to_le_bytes());
            words[12..16].copy_from_slice(&(meeting.address.len() as u32).to_le_bytes());
            words[16..16 + meeting.address.len()].copy_from_slice(meeting.address.as_bytes());
        }
        Some(Ok(meeting)) => root_error = Some(error(comm, MPI_ERR_INTERN, format!("the group address {:?} is too long", meeting.address))),
        Some(Err(failure)) => root_error = Some(failure),
        None => {}
    }
    if let Some(failure) = &root_error {
        words[..4].copy_from_slice(&(failure.class.max(1) as u32).to_le_bytes());
    }
    let words_ref = &mut words;
    Agreement::new(shared.clone(), tuning).run_for(
        comm,
        "the root could not tell the others how the connection went",
        |port| async move { algorithms::bcast(&port, words_ref, root as usize).await },
    )?;
    if let Some(failure) = root_error {
        return Err(failure);
    }
    let word = |at: usize| u32::from_le_bytes(words[at..at + 4].try_into().expect("four bytes"));
    if word(0) != 0 {
        return Err(error(comm, word(0) as c_int, "the root of this side could not reach the other side (its own error says why)"));
    }
    let length = (word(12) as usize).min(ADDRESS_MAX);
    let meeting = Meeting { address: String::from_utf8_lossy(&words[16..16 + length]).into_owned(), accepting: word(4), connecting: word(8) };
    join_sides(comm, &shared, errhandler, side, &meeting)
}

/// Every member's part: joins the group, connects the new processes, agrees on the context ids
/// and makes the intercommunicator.
fn join_sides(comm: MPI_Comm, shared: &Arc<CommShared>, errhandler: MPI_Errhandler, side: Side, meeting: &Meeting) -> MpiResult<MPI_Comm> {
    let accepting = meeting.accepting as usize;
    let rank = shared.rank;
    let id = match side {
        Side::Accepting => rank,
        Side::Connecting => meeting.accepting + rank,
    };
    let failed = |detail: String| error(comm, MPI_ERR_PORT, detail);
    let reachable = Reachable::parse(&meeting.address).ok_or_else(|| failed(format!("the other side's meeting point {:?} is not an address", meeting.address)))?;
    let mut group = reachable
        .first_answering(|address| braid_pmi::group::join_group(&address.to_string(), id).map_err(|failure| failure.reason))
        .map_err(|failure| failed(format!("cannot reach the connection's meeting point {}: {failure}", meeting.address)))?;
    let members = group.size() as usize;
    if members != accepting + meeting.connecting as usize {
        return Err(failed(format!("the other side's group has {members} processes, not {}", accepting + meeting.connecting as usize)));
    }
    let (peers, ids, me) = runtime::with(|rt| {
        let peers = rt.engine.join(&rt.config, &mut group).map_err(|failure| engine_error(comm, failure))?;
        Ok((peers, rt.comms.ids().clone(), rt.comms.job_rank()))
    })?;
    let (mine, theirs) = match side {
        Side::Accepting => (&peers[..accepting], &peers[accepting..]),
        Side::Connecting => (&peers[accepting..], &peers[..accepting]),
    };
    if mine != &shared.members[..] {
        return Err(error(comm, MPI_ERR_INTERN, format!("this side's processes were numbered {mine:?}, not {:?}", shared.members)));
    }
    let context = agree_on_context(comm, &mut group, &ids)?;
    let remote: Members = Arc::from(theirs);
    install(Some(Comm::new(Arc::new(CommShared::new_inter(shared.members.clone(), remote, me, context)), errhandler)))
}

/// Every member of the group agrees, through its key-value space, on two context ids free on
/// each of them (an intercommunicator's).
fn agree_on_context(comm: MPI_Comm, group: &mut dyn Bootstrap, ids: &crate::comm::ContextIds) -> MpiResult<u32> {
    let (me, members) = (group.rank(), group.size());
    let failed = |failure: braid_pmi::BootstrapError| error(comm, MPI_ERR_PORT, format!("the two sides lost each other while agreeing on the new communicator: {failure}"));
    let mut round = 0u32;
    let mut exchange = |mine: [u32; 2]| -> MpiResult<Vec<u32>> {
        round += 1;
        group.put(&format!("braid-context-{round}-{me}"), &format!("{}.{}", mine[0], mine[1])).map_err(failed)?;
        group.fence().map_err(failed)?;
        let mut all = Vec::with_capacity(2 * members as usize);
        for member in 0..members {
            let text = group.get(&format!("braid-context-{round}-{member}")).map_err(failed)?;
            let parsed = text.split_once('.').and_then(|(took, next)| Some([took.parse::<u32>().ok()?, next.parse::<u32>().ok()?]));
            all.extend(parsed.ok_or_else(|| error(comm, MPI_ERR_INTERN, format!("a member proposed {text:?}")))?);
        }
        Ok(all)
    };
    let first = exchange([1, ids.first_free(2)])?;
    let candidate = first.chunks_exact(2).map(|proposal| proposal[1]).max().unwrap_or(0);
    let key = ids::key(u32::MAX, (members as i32).wrapping_neg());
    ids::confirm_with(ids, candidate, 2, key, |mine: Report| Ok(Report::combine(&exchange(mine.words())?)), |class| exhausted(comm, class))
}

#[cold]
fn exhausted(comm: MPI_Comm, class: c_int) -> MpiError {
    error(comm, class, "the processes being connected have no common free context ids left")
}
