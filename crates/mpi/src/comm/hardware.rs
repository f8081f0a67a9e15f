//! MPI_Comm_split_type by hardware or process set (MPI_COMM_TYPE_HW_GUIDED,
//! MPI_COMM_TYPE_RESOURCE_GUIDED and MPI_COMM_TYPE_HW_UNGUIDED): which instance of a level of the
//! machine holds a process, from the machine's topology and the CPUs the process may run on
//! ([`Resource`], pure), and the splits that group the processes of each instance
//! ([`split_by_hardware`]).

use std::ffi::c_int;
use std::sync::OnceLock;

use braid_sys::topology::{CacheKind, Topology};

use super::construct::split;
use crate::consts::*;
use crate::error::MpiResult;
use crate::runtime;
use crate::session::psets::ProcessSet;

/// A level of the machine, largest first in [`Resource::LEVELS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// The node: the processes that share memory (`mpi_shared_memory`, hwloc's `Machine`).
    Node,
    Package,
    NumaNode,
    /// A data or unified cache of this level.
    Cache(u8),
    Core,
    /// A hardware thread.
    Pu,
}

impl Resource {
    /// Largest first: the order MPI_COMM_TYPE_HW_UNGUIDED goes down.
    pub const LEVELS: [Resource; 8] = [Resource::Node, Resource::Package, Resource::NumaNode, Resource::Cache(3), Resource::Cache(2), Resource::Cache(1), Resource::Core, Resource::Pu];

    /// The level `name` names: `mpi_shared_memory`, or one of hwloc's type names (any case).
    pub fn named(name: &str) -> Option<Resource> {
        let name = name.trim().to_ascii_lowercase();
        match name.as_str() {
            "mpi_shared_memory" | "machine" => Some(Resource::Node),
            "package" | "socket" => Some(Resource::Package),
            "numanode" | "numa" => Some(Resource::NumaNode),
            "l3cache" => Some(Resource::Cache(3)),
            "l2cache" => Some(Resource::Cache(2)),
            "l1cache" | "l1dcache" => Some(Resource::Cache(1)),
            "core" => Some(Resource::Core),
            "pu" => Some(Resource::Pu),
            _ => None,
        }
    }

    /// The name a communicator's `mpi_hw_resource_type` info reports.
    pub fn name(self) -> &'static str {
        match self {
            Resource::Node => "mpi_shared_memory",
            Resource::Package => "Package",
            Resource::NumaNode => "NUMANode",
            Resource::Cache(3) => "L3Cache",
            Resource::Cache(2) => "L2Cache",
            Resource::Cache(_) => "L1Cache",
            Resource::Core => "Core",
            Resource::Pu => "PU",
        }
    }

    /// The instance of this level that holds every one of `cpus` (the CPUs the process may run
    /// on), as a number unique on the node; None when they span several instances (an unbound
    /// process spans every level below the node) or the level is absent.
    pub fn instance(self, topology: &Topology, cpus: &[usize]) -> Option<usize> {
        if self == Resource::Node {
            return Some(0);
        }
        let known: Vec<_> = cpus.iter().map(|&id| topology.cpu(id)).collect::<Option<Vec<_>>>()?;
        let first = known.first()?;
        let same = |field: fn(&braid_sys::topology::Cpu) -> usize| known.iter().all(|cpu| field(cpu) == field(first)).then(|| field(first));
        match self {
            Resource::Node => Some(0),
            Resource::Package => same(|cpu| cpu.package),
            Resource::NumaNode => same(|cpu| cpu.numa_node),
            Resource::Core => same(|cpu| cpu.core),
            Resource::Pu => (known.len() == 1).then_some(first.id),
            Resource::Cache(level) => topology.caches.iter().position(|cache| cache.level == level && cache.kind != CacheKind::Instruction && cpus.iter().all(|cpu| cache.cpus.contains(cpu))),
        }
    }
}

/// The info key that names a level (MPI 4.0 §7.4.2), on the call and on the new communicator.
const RESOURCE_KEY: &str = "mpi_hw_resource_type";

/// The info key that names a process set to split by (MPI_COMM_TYPE_RESOURCE_GUIDED, MPI 4.1).
const PSET_KEY: &str = "mpi_pset_name";

/// This machine, read once.
fn topology() -> Option<&'static Topology> {
    static TOPOLOGY: OnceLock<Option<Topology>> = OnceLock::new();
    TOPOLOGY.get_or_init(|| Topology::detect().ok()).as_ref()
}

/// The instance of `level` that holds the calling process (None: it spans several, or the
/// machine's topology cannot be read).
fn own_instance(level: Resource) -> Option<c_int> {
    let cpus = braid_sys::affinity::calling_thread().ok()?;
    level.instance(topology()?, &cpus).map(|instance| instance as c_int)
}

/// MPI_Comm_split_type with MPI_COMM_TYPE_HW_GUIDED (`hints` name the level; an unknown or missing
/// one gives MPI_COMM_NULL), MPI_COMM_TYPE_RESOURCE_GUIDED (a level, or a process set named by
/// `mpi_pset_name`) or MPI_COMM_TYPE_HW_UNGUIDED (the largest level below `comm` that holds fewer
/// of its processes; MPI_COMM_NULL when there is none; its name is also set on `info`, as MPICH
/// does and Python's bindings expect). Collective over `comm`: every member makes the same
/// splits. `node_leader` names the caller's node.
pub(crate) fn split_by_hardware(comm: MPI_Comm, split_type: c_int, key: c_int, info: MPI_Info, hints: &[(String, String)], node_leader: c_int) -> MpiResult<MPI_Comm> {
    let named = |wanted: &str| hints.iter().find(|(k, _)| k == wanted).map(|(_, value)| value.as_str());
    let level = named(RESOURCE_KEY).and_then(Resource::named);
    if split_type == MPI_COMM_TYPE_RESOURCE_GUIDED && named(RESOURCE_KEY).is_none() {
        if let Some(set) = named(PSET_KEY) {
            return split_by_process_set(comm, key, set, node_leader);
        }
    }
    let node = split(comm, node_leader, key)?;
    let (made, level) = match split_type {
        MPI_COMM_TYPE_HW_UNGUIDED => unguided(comm, node, key)?,
        _ => (split_at(node, level, key)?, level),
    };
    if let (Some(level), true) = (level, made != MPI_COMM_NULL) {
        runtime::with(|rt| {
            let hints = &mut rt.comms.get_mut(made)?.hints;
            hints.retain(|(k, _)| k != RESOURCE_KEY);
            hints.push((RESOURCE_KEY.to_string(), level.name().to_string()));
            Ok(())
        })?;
        if split_type == MPI_COMM_TYPE_HW_UNGUIDED && info != MPI_INFO_NULL {
            crate::info::with_infos(|infos| infos.set(info, RESOURCE_KEY, level.name())).map_err(|e| crate::error::error(comm, e.class, e.detail))?;
        }
    }
    Ok(made)
}

/// MPI_COMM_TYPE_RESOURCE_GUIDED by `mpi_pset_name`: the members of `comm` in the caller's
/// instance of the set (all of them for `mpi://WORLD`, the caller alone for `mpi://SELF`, its
/// node for `braid://node`); MPI_COMM_NULL for a name that is no process set.
fn split_by_process_set(comm: MPI_Comm, key: c_int, name: &str, node_leader: c_int) -> MpiResult<MPI_Comm> {
    let own = runtime::with(|rt| Ok(rt.comms.job_rank()))? as c_int;
    let color = match ProcessSet::named(name) {
        Some(ProcessSet::World) => 0,
        Some(ProcessSet::Own) => own,
        Some(ProcessSet::Node) => node_leader,
        None => MPI_UNDEFINED,
    };
    split(comm, color, key)
}

/// The split of `node` by instances of `level` (the node itself for the node level); `node` is
/// freed unless it is what is returned.
fn split_at(node: MPI_Comm, level: Option<Resource>, key: c_int) -> MpiResult<MPI_Comm> {
    if level == Some(Resource::Node) {
        return Ok(node);
    }
    let made = split(node, level.and_then(own_instance).unwrap_or(MPI_UNDEFINED), key)?;
    crate::comm::abi::free(node)?;
    Ok(made)
}

/// MPI_COMM_TYPE_HW_UNGUIDED: every member splits `node` by each level in turn and keeps the
/// first split smaller than `comm`.
fn unguided(comm: MPI_Comm, node: MPI_Comm, key: c_int) -> MpiResult<(MPI_Comm, Option<Resource>)> {
    let size_of = |c: MPI_Comm| runtime::with(|rt| Ok(rt.comms.get(c)?.shared.size()));
    let whole = size_of(comm)?;
    let mut chosen = (size_of(node)? < whole).then_some((node, Resource::Node));
    for level in Resource::LEVELS.into_iter().skip(1) {
        let made = split(node, own_instance(level).unwrap_or(MPI_UNDEFINED), key)?;
        if made == MPI_COMM_NULL {
            continue;
        }
        if chosen.is_none() && size_of(made)? < whole {
            chosen = Some((made, level));
        } else {
            crate::comm::abi::free(made)?;
        }
    }
    if chosen.is_none_or(|(made, _)| made != node) {
        crate::comm::abi::free(node)?;
    }
    Ok(chosen.map_or((MPI_COMM_NULL, None), |(made, level)| (made, Some(level))))
}

/// What MPI_Get_hw_resource_info says of the machine and of where the calling process runs (MPI
/// 4.1 leaves the keys to the implementation): `mpi_hw_resource_type`, the levels this machine
/// has, which MPI_COMM_TYPE_HW_GUIDED accepts (comma-separated, largest first); for each level,
/// `braid_hw_<level>_count`, its instances on the node, and `braid_hw_<level>`, the one holding
/// every CPU the process may run on (`none` when they span several); `braid_cpus`, those CPUs.
pub fn resource_entries(topology: &Topology, cpus: &[usize]) -> crate::info::Entries {
    let count = |level: Resource| -> usize {
        match level {
            Resource::Node => 1,
            Resource::Package => {
                let mut packages: Vec<usize> = topology.cpus.iter().map(|cpu| cpu.package).collect();
                packages.sort_unstable();
                packages.dedup();
                packages.len()
            }
            Resource::NumaNode => topology.numa_nodes.len(),
            Resource::Cache(level) => topology.caches.iter().filter(|cache| cache.level == level && cache.kind != CacheKind::Instruction).count(),
            Resource::Core => topology.cores.len(),
            Resource::Pu => topology.cpus.len(),
        }
    };
    let present: Vec<Resource> = Resource::LEVELS.into_iter().filter(|&level| count(level) > 0).collect();
    let mut entries = vec![(RESOURCE_KEY.to_string(), present.iter().map(|level| level.name()).collect::<Vec<_>>().join(","))];
    for level in present {
        let key = format!("braid_hw_{}", level.name().to_ascii_lowercase());
        entries.push((format!("{key}_count"), count(level).to_string()));
        entries.push((key, level.instance(topology, cpus).map_or_else(|| "none".to_string(), |instance| instance.to_string())));
    }
    entries.push(("braid_cpus".to_string(), braid_sys::topology::format_cpu_list(cpus)));
    entries
}

/// [`resource_entries`] of this machine and the calling process.
pub fn own_resource_entries() -> crate::info::Entries {
    let cpus = braid_sys::affinity::calling_thread().unwrap_or_default();
    match topology() {
        Some(topology) => resource_entries(topology, &cpus),
        None => vec![(RESOURCE_KEY.to_string(), Resource::Node.name().to_string()), ("braid_cpus".to_string(), braid_sys::topology::format_cpu_list(&cpus))],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_sys::topology::{Cache, Core, Cpu, NumaNode};

    /// Two packages of two cores with two threads each; an L3 per package, an L2 per core.
    fn machine() -> Topology {
        let cpus: Vec<Cpu> = (0..8).map(|id| Cpu { id, core: id / 2, package: id / 4, numa_node: id / 4 }).collect();
        let cores = (0..4).map(|core| Core { package: core / 2, numa_node: core / 2, cpus: vec![2 * core, 2 * core + 1] }).collect();
        let mut caches: Vec<Cache> = (0..2).map(|package| Cache { level: 3, kind: CacheKind::Unified, size_bytes: 1 << 25, line_bytes: 64, cpus: (4 * package..4 * package + 4).collect() }).collect();
        caches.extend((0..4).map(|core| Cache { level: 2, kind: CacheKind::Unified, size_bytes: 1 << 20, line_bytes: 64, cpus: vec![2 * core, 2 * core + 1] }));
        caches.extend((0..4).map(|core| Cache { level: 1, kind: CacheKind::Instruction, size_bytes: 1 << 15, line_bytes: 64, cpus: vec![2 * core, 2 * core + 1] }));
        let numa_nodes = (0..2).map(|id| NumaNode { id, cpus: (4 * id..4 * id + 4).collect() }).collect();
        Topology { cpus, cores, caches, numa_nodes }
    }

    #[test]
    fn the_resource_info_lists_the_levels_and_where_the_process_runs() {
        let entries = resource_entries(&machine(), &[4, 5]);
        let get = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        assert_eq!(get("mpi_hw_resource_type"), Some("mpi_shared_memory,Package,NUMANode,L3Cache,L2Cache,Core,PU"));
        assert_eq!((get("braid_hw_package_count"), get("braid_hw_package")), (Some("2"), Some("1")));
        assert_eq!((get("braid_hw_core_count"), get("braid_hw_core")), (Some("4"), Some("2")));
        assert_eq!((get("braid_hw_pu_count"), get("braid_hw_pu")), (Some("8"), Some("none")), "two threads are no single PU");
        assert_eq!(get("braid_hw_l1cache_count"), None, "instruction caches are no level");
        assert_eq!(get("braid_cpus"), Some("4-5"));
    }

    #[test]
    fn names_are_read_in_any_case_and_reported_as_hwloc_does() {
        assert_eq!(Resource::named("NUMANode"), Some(Resource::NumaNode));
        assert_eq!(Resource::named("l3cache"), Some(Resource::Cache(3)));
        assert_eq!(Resource::named("mpi_shared_memory"), Some(Resource::Node));
        assert_eq!(Resource::named("rack"), None);
        for level in Resource::LEVELS {
            assert_eq!(Resource::named(level.name()), Some(level));
        }
    }

    #[test]
    fn a_process_bound_to_one_thread_is_in_one_instance_of_every_level() {
        let topology = machine();
        let on_5 = |level: Resource| level.instance(&topology, &[5]);
        assert_eq!((on_5(Resource::Node), on_5(Resource::Package), on_5(Resource::NumaNode), on_5(Resource::Core), on_5(Resource::Pu)), (Some(0), Some(1), Some(1), Some(2), Some(5)));
        assert_eq!(on_5(Resource::Cache(3)), Some(1));
        assert_eq!(on_5(Resource::Cache(2)), Some(2 + 2));
        // Only instruction caches at level 1: no data cache holds it.
        assert_eq!(on_5(Resource::Cache(1)), None);
    }

    #[test]
    fn a_process_spanning_instances_has_none_below_what_holds_it_all() {
        let topology = machine();
        let core_pair = [4, 5];
        assert_eq!(Resource::Core.instance(&topology, &core_pair), Some(2));
        assert_eq!(Resource::Pu.instance(&topology, &core_pair), None);
        let everywhere: Vec<usize> = (0..8).collect();
        assert_eq!(Resource::Package.instance(&topology, &everywhere), None);
        assert_eq!(Resource::Node.instance(&topology, &everywhere), Some(0));
        assert_eq!(Resource::Package.instance(&topology, &[42]), None);
    }
}
