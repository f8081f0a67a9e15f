//! Placement files: Braid's own (read by `braid run --placement`) and the forms other launchers
//! read (Open MPI's rankfile, Slurm's arbitrary-distribution hostfile, Hydra's machinefile).

use clap::ValueEnum;

/// Where each rank runs: its node and its slot (position among the node's cores, from 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// Node names.
    pub nodes: Vec<String>,
    /// Per rank: index into `nodes`.
    pub node_of_rank: Vec<usize>,
    /// Per rank: its slot on its node.
    pub slot_of_rank: Vec<usize>,
}

/// The first line of Braid's placement files.
const HEADER: &str = "# braid placement/1: rank node slot";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Braid's: `RANK NODE SLOT` per line (`braid run --placement FILE`).
    Braid,
    /// Open MPI's rankfile: `rank R=NODE slot=S` (`mpirun --rankfile FILE`).
    OpenmpiRankfile,
    /// Slurm's hostfile for `--distribution=arbitrary`: rank r's node on line r (SLURM_HOSTFILE).
    Slurm,
    /// Hydra's machinefile: `NODE:1` per rank in rank order (`mpiexec -f FILE`).
    Hydra,
}

impl Placement {
    /// The placement as `format` writes it; `note` goes into a comment where the format has them.
    pub fn text(&self, format: Format, note: &str) -> String {
        let node = |rank: usize| &self.nodes[self.node_of_rank[rank]];
        let ranks = 0..self.node_of_rank.len();
        match format {
            Format::Braid => {
                let mut text = format!("{HEADER}\n# {note}\n");
                for rank in ranks {
                    text += &format!("{rank} {} {}\n", node(rank), self.slot_of_rank[rank]);
                }
                text
            }
            Format::OpenmpiRankfile => {
                let mut text = format!("# {note}\n");
                for rank in ranks {
                    text += &format!("rank {rank}={} slot={}\n", node(rank), self.slot_of_rank[rank]);
                }
                text
            }
            Format::Slurm => ranks.map(|rank| format!("{}\n", node(rank))).collect(),
            Format::Hydra => ranks.map(|rank| format!("{}:1\n", node(rank))).collect(),
        }
    }

    /// Reads Braid's placement format, checking that every rank 0..n-1 appears once, on a node
    /// among `known_nodes` (listed in the error otherwise), and no two ranks share a slot.
    pub fn parse(text: &str, known_nodes: &[String]) -> Result<Placement, String> {
        let mut lines = text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty());
        match lines.next() {
            Some((_, line)) if line.trim() == HEADER => {}
            _ => return Err(format!("not a Braid placement: the first line must be {HEADER:?} (braid place writes it)")),
        }
        let mut entries: Vec<(usize, usize, usize)> = Vec::new();
        for (number, line) in lines.filter(|(_, line)| !line.trim_start().starts_with('#')) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let at = |what: &str| format!("line {}: {what}", number + 1);
            let [rank, node, slot] = fields[..] else {
                return Err(at(&format!("expected `RANK NODE SLOT`, found {line:?}")));
            };
            let rank: usize = rank.parse().map_err(|_| at(&format!("{rank:?} is not a rank")))?;
            let slot: usize = slot.parse().map_err(|_| at(&format!("{slot:?} is not a slot number")))?;
            let node = known_nodes.iter().position(|known| known == node).ok_or_else(|| at(&format!("unknown node {node:?} (the job's nodes: {})", known_nodes.join(", "))))?;
            entries.push((rank, node, slot));
        }
        let size = entries.len();
        let mut node_of_rank = vec![usize::MAX; size];
        let mut slot_of_rank = vec![0; size];
        for &(rank, node, slot) in &entries {
            if rank >= size {
                return Err(format!("rank {rank} is placed, but the file places {size} ranks (0-{})", size.saturating_sub(1)));
            }
            if node_of_rank[rank] != usize::MAX {
                return Err(format!("rank {rank} is placed twice"));
            }
            if let Some(other) = (0..size).find(|&other| node_of_rank[other] == node && slot_of_rank[other] == slot) {
                return Err(format!("ranks {other} and {rank} both take slot {slot} of node {}", known_nodes[node]));
            }
            node_of_rank[rank] = node;
            slot_of_rank[rank] = slot;
        }
        Ok(Placement { nodes: known_nodes.to_vec(), node_of_rank, slot_of_rank })
    }

    /// The most ranks on one node.
    pub fn busiest_node(&self) -> (usize, usize) {
        (0..self.nodes.len()).map(|node| (self.node_of_rank.iter().filter(|&&k| k == node).count(), node)).max().unwrap_or((0, 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> Placement {
        Placement { nodes: vec!["a".into(), "b".into()], node_of_rank: vec![0, 1, 1, 0], slot_of_rank: vec![0, 1, 0, 1] }
    }

    #[test]
    fn every_format_lists_ranks_in_order() {
        let placement = example();
        let braid = placement.text(Format::Braid, "test");
        assert!(braid.ends_with("0 a 0\n1 b 1\n2 b 0\n3 a 1\n"), "{braid}");
        assert!(placement.text(Format::OpenmpiRankfile, "test").ends_with("rank 0=a slot=0\nrank 1=b slot=1\nrank 2=b slot=0\nrank 3=a slot=1\n"));
        assert_eq!(placement.text(Format::Slurm, ""), "a\nb\nb\na\n");
        assert_eq!(placement.text(Format::Hydra, ""), "a:1\nb:1\nb:1\na:1\n");
    }

    #[test]
    fn braid_files_read_back_and_bad_ones_say_why() {
        let placement = example();
        let nodes = placement.nodes.clone();
        assert_eq!(Placement::parse(&placement.text(Format::Braid, "x"), &nodes).unwrap(), placement);
        let with = |body: &str| Placement::parse(&format!("{HEADER}\n{body}"), &nodes);
        assert!(with("0 c 0\n").unwrap_err().contains("unknown node \"c\" (the job's nodes: a, b)"));
        assert!(with("0 a 0\n0 b 0\n").unwrap_err().contains("rank 0 is placed twice"));
        assert!(with("0 a 0\n2 b 0\n").unwrap_err().contains("rank 2 is placed, but the file places 2"));
        assert!(with("0 a 0\n1 a 0\n").unwrap_err().contains("both take slot 0 of node a"));
        assert!(with("0 a\n").unwrap_err().contains("line 2: expected"));
        assert!(Placement::parse("0 a 0\n", &nodes).unwrap_err().contains("not a Braid placement"));
        assert_eq!(placement.busiest_node(), (2, 1));
    }
}
