//! The CPUs that do a network interface's work: those its interrupts are delivered to
//! (`/proc/interrupts`, `/proc/irq/N/effective_affinity_list`), and those its receive and
//! transmit queues are steered to in software (RPS `rps_cpus`, XPS `xps_cpus` under
//! `/sys/class/net/IF/queues`). A rank on one of them shares its core with that work.

use std::io;
use std::path::{Path, PathBuf};

use crate::topology::parse_cpu_list;

/// One interrupt line of an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interrupt {
    pub number: u32,
    /// Its name in /proc/interrupts (e.g. `eth0-TxRx-0`, `virtio2-input.0`).
    pub name: String,
    /// The CPUs it is delivered to (the effective affinity where the kernel reports it).
    pub cpus: Vec<usize>,
}

/// Where one interface's work runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NetworkCores {
    pub interface: String,
    pub interrupts: Vec<Interrupt>,
    /// CPUs receive processing is steered to (RPS), over all receive queues.
    pub rps_cpus: Vec<usize>,
    /// CPUs transmit queues are tied to (XPS), over all transmit queues.
    pub xps_cpus: Vec<usize>,
}

impl NetworkCores {
    /// The CPUs that take the interface's interrupts or its steered receive processing.
    pub fn cpus(&self) -> Vec<usize> {
        let mut cpus: Vec<usize> = self.interrupts.iter().flat_map(|interrupt| interrupt.cpus.iter().copied()).chain(self.rps_cpus.iter().copied()).collect();
        cpus.sort_unstable();
        cpus.dedup();
        cpus
    }
}

/// The interfaces of this network namespace, loopback left out, in name order.
pub fn interfaces() -> io::Result<Vec<String>> {
    interfaces_in(Path::new("/"))
}

fn interfaces_in(root: &Path) -> io::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(root.join("sys/class/net"))?.flatten().map(|entry| entry.file_name().to_string_lossy().into_owned()).filter(|name| name != "lo").collect();
    names.sort();
    Ok(names)
}

/// Where `interface`'s work runs on this machine.
pub fn detect(interface: &str) -> io::Result<NetworkCores> {
    detect_in(Path::new("/"), interface)
}

/// [`detect`] under `root` (a copy of /proc and /sys, for tests).
pub fn detect_in(root: &Path, interface: &str) -> io::Result<NetworkCores> {
    let class = root.join("sys/class/net").join(interface);
    if !class.exists() {
        return Err(io::Error::new(io::ErrorKind::NotFound, format!("no network interface {interface}")));
    }
    // A physical or virtio NIC names its interrupts after the interface, its device (virtio2) or
    // its PCI address; virtual interfaces (veth, bridges) have none.
    let device = std::fs::read_link(class.join("device")).ok().and_then(|target| target.file_name().map(|name| name.to_string_lossy().into_owned()));
    let parent = std::fs::canonicalize(class.join("device")).ok().and_then(|path| path.parent().and_then(Path::file_name).map(|name| name.to_string_lossy().into_owned()));
    let mut keys = vec![interface.to_string()];
    for name in device.iter().chain(parent.iter()) {
        match is_pci_address(name) {
            true => keys.push(name.clone()),
            false if Some(name) == device.as_ref() => keys.push(format!("{name}-")),
            false => {}
        }
    }
    let pci = keys.len() > 1;
    let table = std::fs::read_to_string(root.join("proc/interrupts")).unwrap_or_default();
    let interrupts = match pci {
        true => parse_interrupts(&table)
            .into_iter()
            .filter(|(_, name)| keys.iter().any(|key| name_matches(name, key)))
            .map(|(number, name)| Interrupt { number, name, cpus: interrupt_cpus(root, number) })
            .collect(),
        false => Vec::new(),
    };
    Ok(NetworkCores { interface: interface.to_string(), interrupts, rps_cpus: queue_cpus(&class, "rx-", "rps_cpus"), xps_cpus: queue_cpus(&class, "tx-", "xps_cpus") })
}

/// Whether `name` is a PCI address (`0000:3b:00.0`).
fn is_pci_address(name: &str) -> bool {
    let parts: Vec<&str> = name.split([':', '.']).collect();
    parts.len() == 4 && parts.iter().all(|part| !part.is_empty() && part.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Whether an interrupt named `name` belongs to `key` (an interface name, `device-`, or a PCI
/// address): `eth0` matches `eth0-TxRx-0` and `eth0` but not `eth01`.
fn name_matches(name: &str, key: &str) -> bool {
    if key.ends_with('-') {
        return name.starts_with(key);
    }
    if is_pci_address(key) {
        return name.contains(key);
    }
    name == key || name.starts_with(&format!("{key}-")) || name.starts_with(&format!("{key}_"))
}

/// The CPUs interrupt `number` goes to: its effective affinity, else the allowed one.
fn interrupt_cpus(root: &Path, number: u32) -> Vec<usize> {
    let directory = root.join("proc/irq").join(number.to_string());
    ["effective_affinity_list", "smp_affinity_list"]
        .iter()
        .find_map(|file| std::fs::read_to_string(directory.join(file)).ok().and_then(|text| parse_cpu_list(text.trim())).filter(|cpus| !cpus.is_empty()))
        .unwrap_or_default()
}

/// The union of the CPU masks `file` of the queues `prefix`* of an interface.
fn queue_cpus(class: &Path, prefix: &str, file: &str) -> Vec<usize> {
    let Ok(entries) = std::fs::read_dir(class.join("queues")) else {
        return Vec::new();
    };
    let queues: Vec<PathBuf> = entries.flatten().filter(|entry| entry.file_name().to_string_lossy().starts_with(prefix)).map(|entry| entry.path().join(file)).collect();
    let mut cpus: Vec<usize> = queues.iter().filter_map(|path| std::fs::read_to_string(path).ok()).filter_map(|text| parse_cpu_mask(&text)).flatten().collect();
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// The interrupt lines of /proc/interrupts: number and name (the last field).
pub fn parse_interrupts(text: &str) -> Vec<(u32, String)> {
    text.lines()
        .filter_map(|line| {
            let (number, rest) = line.trim_start().split_once(':')?;
            let number: u32 = number.parse().ok()?;
            let name = rest.split_whitespace().last()?.to_string();
            Some((number, name))
        })
        .collect()
}

/// A kernel CPU mask (`00000000,00000005`: comma-separated 32-bit hex words, highest first).
pub fn parse_cpu_mask(text: &str) -> Option<Vec<usize>> {
    let words: Vec<&str> = text.trim().split(',').collect();
    let mut cpus = Vec::new();
    for (index, word) in words.iter().rev().enumerate() {
        let bits = u32::from_str_radix(word, 16).ok()?;
        cpus.extend((0..32).filter(|bit| bits & (1 << bit) != 0).map(|bit| index * 32 + bit));
    }
    Some(cpus)
}

/// A kernel CPU mask for `cpus` (the form rps_cpus takes).
pub fn format_cpu_mask(cpus: &[usize]) -> String {
    let words = cpus.iter().max().map_or(1, |&highest| highest / 32 + 1);
    let mut masks = vec![0u32; words];
    for &cpu in cpus {
        masks[cpu / 32] |= 1 << (cpu % 32);
    }
    masks.iter().rev().map(|mask| format!("{mask:08x}")).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_read_and_write_the_kernels_form() {
        assert_eq!(parse_cpu_mask("00000000,00000005\n"), Some(vec![0, 2]));
        assert_eq!(parse_cpu_mask("1,80000000"), Some(vec![31, 32]));
        assert_eq!(parse_cpu_mask("0"), Some(vec![]));
        assert_eq!(parse_cpu_mask("xyz"), None);
        assert_eq!(format_cpu_mask(&[0, 2]), "00000005");
        assert_eq!(format_cpu_mask(&[31, 32]), "00000001,80000000");
        assert_eq!(parse_cpu_mask(&format_cpu_mask(&[1, 40, 63])), Some(vec![1, 40, 63]));
    }

    #[test]
    fn interrupt_lines_give_number_and_name() {
        let text = "           CPU0       CPU1\n 38:          0       5541 PCI-MSIX-0000:00:03.0   1-edge      virtio2-input.0\nNMI:          0          0   Non-maskable interrupts\n 90: 1 2 IR-PCI-MSI 524288-edge eth0-TxRx-0\n";
        assert_eq!(parse_interrupts(text), [(38, "virtio2-input.0".to_string()), (90, "eth0-TxRx-0".to_string())]);
        assert!(name_matches("eth0-TxRx-0", "eth0") && !name_matches("eth01-TxRx-0", "eth0"));
        assert!(name_matches("virtio2-input.0", "virtio2-") && !name_matches("virtio21-input.0", "virtio2-"));
        assert!(name_matches("mlx5_comp0@pci:0000:3b:00.0", "0000:3b:00.0"));
        assert!(is_pci_address("0000:3b:00.0") && !is_pci_address("pci0000:00") && !is_pci_address("virtio2"));
    }

    #[test]
    fn a_nic_is_found_through_its_device_and_its_queues() {
        let root = std::env::temp_dir().join(format!("braid-netcores-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let class = root.join("sys/class/net/eth0");
        let device = root.join("sys/devices/pci0000:00/0000:00:03.0/virtio2");
        for dir in [
            class.join("queues/rx-0"),
            class.join("queues/rx-1"),
            class.join("queues/tx-0"),
            device.clone(),
            root.join("proc/irq/38"),
            root.join("proc/irq/39"),
            root.join("sys/class/net/veth0/queues/rx-0"),
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::os::unix::fs::symlink(&device, class.join("device")).unwrap();
        std::fs::write(class.join("queues/rx-0/rps_cpus"), "00000000\n").unwrap();
        std::fs::write(class.join("queues/rx-1/rps_cpus"), "00000008\n").unwrap();
        std::fs::write(class.join("queues/tx-0/xps_cpus"), "00000001\n").unwrap();
        std::fs::write(root.join("sys/class/net/veth0/queues/rx-0/rps_cpus"), "00000002\n").unwrap();
        std::fs::write(root.join("proc/interrupts"), "  CPU0 CPU1\n 38: 0 5 PCI-MSIX 1-edge virtio2-input.0\n 39: 7 0 PCI-MSIX 2-edge virtio2-output.0\n 40: 1 1 PCI-MSIX 1-edge virtio3-input.0\n")
            .unwrap();
        std::fs::write(root.join("proc/irq/38/effective_affinity_list"), "1\n").unwrap();
        std::fs::write(root.join("proc/irq/38/smp_affinity_list"), "0-1\n").unwrap();
        std::fs::write(root.join("proc/irq/39/smp_affinity_list"), "0\n").unwrap();
        let cores = detect_in(&root, "eth0").unwrap();
        assert_eq!(cores.interrupts.iter().map(|interrupt| (interrupt.number, interrupt.cpus.clone())).collect::<Vec<_>>(), [(38, vec![1]), (39, vec![0])]);
        assert_eq!((cores.rps_cpus.clone(), cores.xps_cpus.clone(), cores.cpus()), (vec![3], vec![0], vec![0, 1, 3]));
        let veth = detect_in(&root, "veth0").unwrap();
        assert_eq!((veth.interrupts.len(), veth.cpus()), (0, vec![1]));
        assert_eq!(interfaces_in(&root).unwrap(), ["eth0", "veth0"]);
        assert!(detect_in(&root, "eth9").is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
