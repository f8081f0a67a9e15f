//! Open MPI's monitoring variables under their own names, so MPI_T tools written for Open MPI's
//! monitoring component read Braid unchanged:
//! * `pml_monitoring_messages_count` / `pml_monitoring_messages_size`: bound to a communicator,
//!   one element per rank of it (the remote group's for an intercommunicator), the messages and
//!   bytes this rank sent to that rank since the monitoring was last reset. Open MPI serves them
//!   on MPI_COMM_WORLD only; Braid on every communicator, though the counts are per process, not
//!   per communicator, as Open MPI's are.
//! * `pml_monitoring_flush`: writing a file name to its handle, then stopping the handle, writes
//!   `NAME.RANK.prof` with what this rank sent since the last reset, and resets. Allocating a
//!   handle resets too; an empty name writes nothing.
//!
//! The engine does not tell an application's messages from the collectives' own, so every
//! message is counted as Open MPI counts them with `pml_monitoring_enable 1` (point-to-point and
//! collective aggregated): one `E` line per peer with its 66-bucket size histogram.

use std::fmt::Write as _;

use braid_engine::{CounterValues, PeerTraffic, SIZE_BUCKETS};

/// The monitoring's state: when it was last reset and where it flushes to.
#[derive(Debug, Default)]
pub(crate) struct Monitoring {
    /// The counters at the last reset (`None`: the start of the job).
    baseline: Option<CounterValues>,
    /// Where the next flush writes (`NAME.RANK.prof`); `None` writes nothing.
    file_name: Option<String>,
}

impl Monitoring {
    pub(crate) const fn new() -> Monitoring {
        Monitoring { baseline: None, file_name: None }
    }

    /// Starts counting from `now`.
    pub(crate) fn reset(&mut self, now: CounterValues) {
        self.baseline = Some(now);
    }

    /// Sets where the next flush writes; an empty name means nowhere.
    pub(crate) fn set_file_name(&mut self, name: &str) {
        self.file_name = (!name.is_empty()).then(|| name.to_owned());
    }

    pub(crate) fn file_name(&self) -> &str {
        self.file_name.as_deref().unwrap_or("")
    }

    /// The counters since the last reset: `now` with the baseline's per-peer traffic taken off.
    pub(crate) fn since_reset(&self, mut now: CounterValues) -> CounterValues {
        let Some(baseline) = &self.baseline else {
            return now;
        };
        for (peer, before) in now.peers.iter_mut().zip(&baseline.peers) {
            *peer = PeerTraffic {
                messages_sent: peer.messages_sent.saturating_sub(before.messages_sent),
                bytes_sent: peer.bytes_sent.saturating_sub(before.bytes_sent),
                messages_received: peer.messages_received.saturating_sub(before.messages_received),
                bytes_received: peer.bytes_received.saturating_sub(before.bytes_received),
            };
        }
        for (sizes, before) in now.sent_sizes.iter_mut().zip(&baseline.sent_sizes) {
            for (count, earlier) in sizes.iter_mut().zip(before) {
                *count = count.saturating_sub(*earlier);
            }
        }
        now
    }

    /// Writes what job rank `rank` sent since the last reset to `NAME.RANK.prof` (when a name is
    /// set), then resets to `now`.
    pub(crate) fn flush(&mut self, rank: u32, now: CounterValues) -> std::io::Result<()> {
        if let Some(name) = &self.file_name {
            std::fs::write(format!("{name}.{rank}.prof"), prof_text(rank, &self.since_reset(now.clone())))?;
        }
        self.reset(now);
        Ok(())
    }
}

/// Open MPI's monitoring file text for job rank `rank`: one `E` line per peer sent to.
pub(crate) fn prof_text(rank: u32, values: &CounterValues) -> String {
    let mut text = String::from("# POINT TO POINT\n");
    let empty = [0; SIZE_BUCKETS];
    for (peer, traffic) in values.peers.iter().enumerate().filter(|(_, traffic)| traffic.messages_sent > 0) {
        let sizes = values.sent_sizes.get(peer).unwrap_or(&empty);
        let histogram: Vec<String> = sizes.iter().map(u64::to_string).collect();
        let _ = writeln!(text, "E\t{rank}\t{peer}\t{} bytes\t{} msgs sent\t{}", traffic.bytes_sent, traffic.messages_sent, histogram.join(","));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(messages: u64, bytes: u64) -> PeerTraffic {
        PeerTraffic { messages_sent: messages, bytes_sent: bytes, ..PeerTraffic::default() }
    }

    fn values(peers: Vec<PeerTraffic>, bucket: usize) -> CounterValues {
        let sent_sizes = peers
            .iter()
            .map(|traffic| {
                let mut sizes = [0; SIZE_BUCKETS];
                sizes[bucket] = traffic.messages_sent;
                sizes
            })
            .collect();
        CounterValues { peers, sent_sizes, ..CounterValues::default() }
    }

    #[test]
    fn counts_start_again_at_each_reset() {
        let mut monitoring = Monitoring::default();
        let first = values(vec![sent(0, 0), sent(3, 300)], 7);
        assert_eq!(monitoring.since_reset(first.clone()).peers[1], sent(3, 300));
        monitoring.reset(first);
        let later = monitoring.since_reset(values(vec![sent(1, 8), sent(5, 500)], 7));
        assert_eq!((later.peers[0], later.peers[1]), (sent(1, 8), sent(2, 200)));
        assert_eq!(later.sent_sizes[1][7], 2);
    }

    #[test]
    fn the_file_has_one_line_per_peer_sent_to_with_66_buckets() {
        let text = prof_text(2, &values(vec![sent(4, 4096), sent(0, 0), sent(1, 0)], 0));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "# POINT TO POINT");
        assert_eq!(lines.len(), 3);
        let fields: Vec<&str> = lines[1].split('\t').collect();
        assert_eq!(&fields[..5], ["E", "2", "0", "4096 bytes", "4 msgs sent"]);
        assert_eq!(fields[5].split(',').count(), SIZE_BUCKETS);
        assert!(lines[2].starts_with("E\t2\t2\t0 bytes\t1 msgs sent\t1,0,"));
    }

    #[test]
    fn a_flush_writes_the_named_file_and_resets() {
        let dir = std::env::temp_dir().join(format!("braid-monitoring-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut monitoring = Monitoring::default();
        monitoring.flush(0, values(vec![sent(1, 1)], 1)).unwrap();
        monitoring.set_file_name(dir.join("phase").to_str().unwrap());
        monitoring.flush(3, values(vec![sent(4, 10)], 1)).unwrap();
        let text = std::fs::read_to_string(dir.join("phase.3.prof")).unwrap();
        assert!(text.contains("E\t3\t0\t9 bytes\t3 msgs sent\t0,3,"), "{text}");
        monitoring.set_file_name("");
        assert_eq!(monitoring.file_name(), "");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
