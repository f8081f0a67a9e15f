//! The machine's layout as Linux describes it under /sys: CPUs, cores, packages (sockets), NUMA
//! nodes and caches. Reading is plain file I/O; [`Topology::from_sysfs`] takes another root so tests
//! can describe machines this one is not.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// One logical CPU (hardware thread).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cpu {
    /// The kernel's CPU number.
    pub id: usize,
    /// Index into [`Topology::cores`].
    pub core: usize,
    /// The package (socket) number, `physical_package_id`.
    pub package: usize,
    /// The NUMA node; 0 when the kernel reports none.
    pub numa_node: usize,
}

/// One physical core: its hardware threads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Core {
    pub package: usize,
    pub numa_node: usize,
    /// Ascending CPU numbers of this core's hardware threads.
    pub cpus: Vec<usize>,
}

/// What a cache holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    Data,
    Instruction,
    Unified,
}

impl fmt::Display for CacheKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CacheKind::Data => "data",
            CacheKind::Instruction => "instruction",
            CacheKind::Unified => "unified",
        })
    }
}

/// One cache instance and the CPUs that share it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    pub level: u8,
    pub kind: CacheKind,
    pub size_bytes: usize,
    pub line_bytes: usize,
    /// Ascending CPU numbers sharing this cache.
    pub cpus: Vec<usize>,
}

/// One NUMA node and its CPUs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    pub id: usize,
    pub cpus: Vec<usize>,
}

/// The machine, as of when it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topology {
    /// Online CPUs, ascending by id.
    pub cpus: Vec<Cpu>,
    /// Physical cores, ordered by package, then by lowest CPU number.
    pub cores: Vec<Core>,
    /// Distinct cache instances, by level, then kind, then lowest CPU.
    pub caches: Vec<Cache>,
    /// NUMA nodes having online CPUs, ascending; one node 0 holding every CPU when the kernel has
    /// no NUMA support.
    pub numa_nodes: Vec<NumaNode>,
}

impl Topology {
    /// Reads this machine's /sys.
    pub fn detect() -> io::Result<Topology> {
        Topology::from_sysfs(Path::new("/sys"))
    }

    /// Reads a /sys tree rooted at `root` (only `devices/system/{cpu,node}` are used).
    pub fn from_sysfs(root: &Path) -> io::Result<Topology> {
        let cpu_root = root.join("devices/system/cpu");
        let online = parse_cpu_list(read_trimmed(&cpu_root.join("online"))?.as_str()).ok_or_else(|| invalid(&cpu_root.join("online"), "not a CPU list"))?;
        let numa_nodes = read_numa_nodes(&root.join("devices/system/node"), &online)?;
        let numa_of = |cpu: usize| numa_nodes.iter().find(|node| node.cpus.contains(&cpu)).map_or(0, |node| node.id);

        let mut core_index: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        let mut cores: Vec<Core> = Vec::new();
        let mut cpus = Vec::with_capacity(online.len());
        let mut caches: Vec<Cache> = Vec::new();
        for &id in &online {
            let topology_dir = cpu_root.join(format!("cpu{id}/topology"));
            let package = read_number(&topology_dir.join("physical_package_id")).unwrap_or(0);
            // Siblings share a core; the lowest online sibling names it (core_id repeats across packages).
            let siblings = read_cpu_list(&topology_dir.join("thread_siblings_list")).unwrap_or_else(|_| vec![id]);
            let first_sibling = siblings.iter().copied().find(|cpu| online.contains(cpu)).unwrap_or(id);
            let core = *core_index.entry((package, first_sibling)).or_insert_with(|| {
                cores.push(Core { package, numa_node: numa_of(id), cpus: Vec::new() });
                cores.len() - 1
            });
            cores[core].cpus.push(id);
            cpus.push(Cpu { id, core, package, numa_node: numa_of(id) });
            for cache in read_caches(&cpu_root.join(format!("cpu{id}/cache")))? {
                if !caches.iter().any(|known| known.level == cache.level && known.kind == cache.kind && known.cpus == cache.cpus) {
                    caches.push(cache);
                }
            }
        }

        // Order cores by package, then lowest CPU, and renumber the CPUs' core indices to match.
        let mut order: Vec<usize> = (0..cores.len()).collect();
        order.sort_by_key(|&index| (cores[index].package, cores[index].cpus[0]));
        let mut new_index = vec![0; cores.len()];
        for (new, &old) in order.iter().enumerate() {
            new_index[old] = new;
        }
        let cores: Vec<Core> = order.iter().map(|&old| cores[old].clone()).collect();
        for cpu in &mut cpus {
            cpu.core = new_index[cpu.core];
        }
        caches.sort_by_key(|cache| (cache.level, cache.kind as u8, cache.cpus.first().copied()));
        Ok(Topology { cpus, cores, caches, numa_nodes })
    }

    /// Package (socket) numbers, ascending.
    pub fn packages(&self) -> Vec<usize> {
        let mut packages: Vec<usize> = self.cpus.iter().map(|cpu| cpu.package).collect();
        packages.dedup();
        packages.sort_unstable();
        packages.dedup();
        packages
    }

    /// Online CPUs of package `package`, ascending.
    pub fn package_cpus(&self, package: usize) -> Vec<usize> {
        self.cpus.iter().filter(|cpu| cpu.package == package).map(|cpu| cpu.id).collect()
    }

    /// The CPU with kernel number `id`, if online.
    pub fn cpu(&self, id: usize) -> Option<&Cpu> {
        self.cpus.iter().find(|cpu| cpu.id == id)
    }
}

/// Parses a kernel CPU list such as `0-3,8,10-11` (empty text is the empty list).
pub fn parse_cpu_list(text: &str) -> Option<Vec<usize>> {
    let mut cpus = Vec::new();
    for part in text.trim().split(',').filter(|part| !part.is_empty()) {
        match part.split_once('-') {
            Some((first, last)) => {
                let (first, last): (usize, usize) = (first.trim().parse().ok()?, last.trim().parse().ok()?);
                if first > last {
                    return None;
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(part.trim().parse().ok()?),
        }
    }
    cpus.sort_unstable();
    cpus.dedup();
    Some(cpus)
}

/// Formats CPU numbers the way the kernel does: ascending ranges, `0-3,8,10-11`.
pub fn format_cpu_list(cpus: &[usize]) -> String {
    let mut sorted = cpus.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let mut parts = Vec::new();
    let mut index = 0;
    while index < sorted.len() {
        let start = sorted[index];
        let mut end = start;
        while index + 1 < sorted.len() && sorted[index + 1] == end + 1 {
            index += 1;
            end = sorted[index];
        }
        parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
        index += 1;
    }
    parts.join(",")
}

/// Parses a sysfs size such as `32K`, `2048K`, `32M` or a plain byte count.
fn parse_cache_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let (digits, multiplier) = match text.as_bytes().last()? {
        b'K' | b'k' => (&text[..text.len() - 1], 1 << 10),
        b'M' | b'm' => (&text[..text.len() - 1], 1 << 20),
        b'G' | b'g' => (&text[..text.len() - 1], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<usize>().ok()?.checked_mul(multiplier)
}

fn read_numa_nodes(node_root: &Path, online: &[usize]) -> io::Result<Vec<NumaNode>> {
    let mut nodes = Vec::new();
    if let Ok(entries) = fs::read_dir(node_root) {
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(|name| name.strip_prefix("node")).and_then(|id| id.parse().ok()) else {
                continue;
            };
            let cpus: Vec<usize> = read_cpu_list(&entry.path().join("cpulist"))?.into_iter().filter(|cpu| online.contains(cpu)).collect();
            if !cpus.is_empty() {
                nodes.push(NumaNode { id, cpus });
            }
        }
    }
    if nodes.is_empty() {
        nodes.push(NumaNode { id: 0, cpus: online.to_vec() });
    }
    nodes.sort_by_key(|node| node.id);
    Ok(nodes)
}

fn read_caches(cache_root: &Path) -> io::Result<Vec<Cache>> {
    let mut caches = Vec::new();
    let Ok(entries) = fs::read_dir(cache_root) else { return Ok(caches) };
    for entry in entries {
        let dir = entry?.path();
        let is_index = dir.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with("index"));
        if !is_index {
            continue;
        }
        let kind = match read_trimmed(&dir.join("type"))?.as_str() {
            "Data" => CacheKind::Data,
            "Instruction" => CacheKind::Instruction,
            _ => CacheKind::Unified,
        };
        let level = read_number(&dir.join("level"))? as u8;
        let size_text = read_trimmed(&dir.join("size"))?;
        let size_bytes = parse_cache_size(&size_text).ok_or_else(|| invalid(&dir.join("size"), "not a size"))?;
        let line_bytes = read_number(&dir.join("coherency_line_size")).unwrap_or(64);
        let cpus = read_cpu_list(&dir.join("shared_cpu_list"))?;
        caches.push(Cache { level, kind, size_bytes, line_bytes, cpus });
    }
    Ok(caches)
}

fn read_trimmed(path: &Path) -> io::Result<String> {
    fs::read_to_string(path).map(|text| text.trim().to_string()).map_err(|error| io::Error::new(error.kind(), format!("{}: {error}", path.display())))
}

fn read_number(path: &Path) -> io::Result<usize> {
    read_trimmed(path)?.parse().map_err(|_| invalid(path, "not a number"))
}

fn read_cpu_list(path: &Path) -> io::Result<Vec<usize>> {
    parse_cpu_list(&read_trimmed(path)?).ok_or_else(|| invalid(path, "not a CPU list"))
}

fn invalid(path: &Path, what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{}: {what}", PathBuf::from(path).display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_and_format() {
        assert_eq!(parse_cpu_list("0-3,8,10-11\n"), Some(vec![0, 1, 2, 3, 8, 10, 11]));
        assert_eq!(parse_cpu_list(""), Some(vec![]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
        assert_eq!(format_cpu_list(&[11, 0, 1, 2, 3, 8, 10]), "0-3,8,10-11");
        assert_eq!(format_cpu_list(&[5]), "5");
        assert_eq!(format_cpu_list(&[]), "");
        assert_eq!(parse_cache_size("2048K"), Some(2 << 20));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
    }

    struct FakeSysfs(PathBuf);

    impl FakeSysfs {
        fn write(&self, relative: &str, text: &str) {
            let path = self.0.join(relative);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, text).unwrap();
        }
    }

    impl Drop for FakeSysfs {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Two packages of two cores of two threads each, one NUMA node per package, an L3 per package.
    fn two_socket_machine() -> FakeSysfs {
        let root = std::env::temp_dir().join(format!("braid-topology-test-{}", std::process::id()));
        let fake = FakeSysfs(root);
        fake.write("devices/system/cpu/online", "0-7\n");
        // Linux numbering: CPUs 0-3 are the first thread of each core, 4-7 their siblings.
        for cpu in 0..8usize {
            let first = cpu % 4;
            let package = first / 2;
            let dir = format!("devices/system/cpu/cpu{cpu}");
            fake.write(&format!("{dir}/topology/physical_package_id"), &format!("{package}\n"));
            fake.write(&format!("{dir}/topology/thread_siblings_list"), &format!("{first},{}\n", first + 4));
            fake.write(&format!("{dir}/cache/index0/level"), "1\n");
            fake.write(&format!("{dir}/cache/index0/type"), "Data\n");
            fake.write(&format!("{dir}/cache/index0/size"), "48K\n");
            fake.write(&format!("{dir}/cache/index0/shared_cpu_list"), &format!("{first},{}\n", first + 4));
            let package_cpus = format!("{}-{},{}-{}", package * 2, package * 2 + 1, package * 2 + 4, package * 2 + 5);
            fake.write(&format!("{dir}/cache/index3/level"), "3\n");
            fake.write(&format!("{dir}/cache/index3/type"), "Unified\n");
            fake.write(&format!("{dir}/cache/index3/size"), "32768K\n");
            fake.write(&format!("{dir}/cache/index3/shared_cpu_list"), &format!("{package_cpus}\n"));
        }
        fake.write("devices/system/node/node0/cpulist", "0-1,4-5\n");
        fake.write("devices/system/node/node1/cpulist", "2-3,6-7\n");
        fake.write("devices/system/node/possible", "0-1\n");
        fake
    }

    #[test]
    fn a_described_machine_is_read_back() {
        let fake = two_socket_machine();
        let topology = Topology::from_sysfs(&fake.0).unwrap();
        assert_eq!(topology.cpus.len(), 8);
        assert_eq!(topology.packages(), vec![0, 1]);
        assert_eq!(topology.package_cpus(1), vec![2, 3, 6, 7]);
        let core_cpus: Vec<Vec<usize>> = topology.cores.iter().map(|core| core.cpus.clone()).collect();
        assert_eq!(core_cpus, vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        assert_eq!(topology.cpu(6).unwrap().core, 2);
        assert_eq!(topology.cpu(6).unwrap().numa_node, 1);
        assert_eq!(topology.numa_nodes.len(), 2);
        let l1: Vec<&Cache> = topology.caches.iter().filter(|cache| cache.level == 1).collect();
        assert_eq!(l1.len(), 4);
        assert_eq!(l1[0].size_bytes, 48 << 10);
        let l3: Vec<&Cache> = topology.caches.iter().filter(|cache| cache.level == 3).collect();
        assert_eq!(l3.len(), 2);
        assert_eq!(l3[1].cpus, vec![2, 3, 6, 7]);
        assert_eq!(l3[1].kind, CacheKind::Unified);
    }

    #[test]
    fn this_machine_is_consistent() {
        let topology = Topology::detect().unwrap();
        assert!(!topology.cpus.is_empty());
        let cpus_in_cores: usize = topology.cores.iter().map(|core| core.cpus.len()).sum();
        assert_eq!(cpus_in_cores, topology.cpus.len());
        let cpus_in_nodes: usize = topology.numa_nodes.iter().map(|node| node.cpus.len()).sum();
        assert_eq!(cpus_in_nodes, topology.cpus.len());
        for cpu in &topology.cpus {
            assert!(topology.cores[cpu.core].cpus.contains(&cpu.id));
        }
    }
}
