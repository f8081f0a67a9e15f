//! The process sets a session offers: every process of the job, the calling process alone, and
//! the processes of the caller's node.

/// Their names, in the order MPI_Session_get_nth_pset gives them.
pub const PSET_NAMES: [&str; 3] = ["mpi://WORLD", "mpi://SELF", "braid://node"];

/// A process set, resolved for the calling process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessSet {
    World,
    Own,
    Node,
}

impl ProcessSet {
    /// The set named `name`. The `mpi://` names are matched without regard to case, as MPI
    /// reserves them whatever their case.
    pub fn named(name: &str) -> Option<ProcessSet> {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "mpi://world" => Some(ProcessSet::World),
            "mpi://self" => Some(ProcessSet::Own),
            _ if name == PSET_NAMES[2] => Some(ProcessSet::Node),
            _ => None,
        }
    }

    /// The job ranks in the set, for job rank `me` in a job of `size` whose node holds
    /// `node_ranks` (in increasing order).
    pub fn members(self, me: u32, size: u32, node_ranks: &[u32]) -> Vec<u32> {
        match self {
            ProcessSet::World => (0..size).collect(),
            ProcessSet::Own => vec![me],
            ProcessSet::Node if node_ranks.is_empty() => vec![me],
            ProcessSet::Node => node_ranks.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_name_resolves_and_others_do_not() {
        for name in PSET_NAMES {
            assert!(ProcessSet::named(name).is_some(), "{name}");
        }
        assert_eq!(ProcessSet::named("MPI://world"), Some(ProcessSet::World));
        assert_eq!(ProcessSet::named("mpi://nodes"), None);
        assert_eq!(ProcessSet::named("BRAID://NODE"), None);
    }

    #[test]
    fn members_are_job_ranks() {
        assert_eq!(ProcessSet::World.members(2, 4, &[2, 3]), [0, 1, 2, 3]);
        assert_eq!(ProcessSet::Own.members(2, 4, &[2, 3]), [2]);
        assert_eq!(ProcessSet::Node.members(2, 4, &[2, 3]), [2, 3]);
        assert_eq!(ProcessSet::Node.members(2, 4, &[]), [2]);
    }
}
