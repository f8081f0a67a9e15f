//! An in-process bootstrap: N ranks as N threads sharing one key-value space. Tests use it to
//! run transports and the engine with several "ranks" inside one test process.

use std::collections::HashMap;
use std::sync::{Arc, Barrier, Mutex};

use crate::{Bootstrap, BootstrapError};

struct Shared {
    job_id: String,
    values: Mutex<HashMap<String, String>>,
    barrier: Barrier,
}

/// One rank's handle on an in-process job.
pub struct ThreadBootstrap {
    rank: u32,
    size: u32,
    shared: Arc<Shared>,
}

impl ThreadBootstrap {
    /// Creates the bootstraps of a job of `size` ranks; hand one to each thread.
    /// `job_id` should be unique per test (it names shared-memory files).
    pub fn job(job_id: &str, size: u32) -> Vec<ThreadBootstrap> {
        let shared = Arc::new(Shared { job_id: job_id.to_string(), values: Mutex::new(HashMap::new()), barrier: Barrier::new(size as usize) });
        (0..size).map(|rank| ThreadBootstrap { rank, size, shared: Arc::clone(&shared) }).collect()
    }
}

impl Bootstrap for ThreadBootstrap {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn size(&self) -> u32 {
        self.size
    }

    fn job_id(&self) -> &str {
        &self.shared.job_id
    }

    fn put(&mut self, key: &str, value: &str) -> Result<(), BootstrapError> {
        self.shared.values.lock().expect("kvs lock").insert(key.to_string(), value.to_string());
        Ok(())
    }

    fn get(&mut self, key: &str) -> Result<String, BootstrapError> {
        self.shared.values.lock().expect("kvs lock").get(key).cloned().ok_or_else(|| BootstrapError { operation: "get", reason: format!("no value for key {key}") })
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        self.shared.barrier.wait();
        Ok(())
    }

    fn finalize(&mut self) -> Result<(), BootstrapError> {
        Ok(())
    }

    fn abort(&mut self, code: i32, message: &str) -> Result<(), BootstrapError> {
        Err(BootstrapError { operation: "abort", reason: format!("in-process job aborted with code {code}: {message}") })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_put_before_a_fence_are_seen_by_all() {
        let handles: Vec<_> = ThreadBootstrap::job("threads-test", 3)
            .into_iter()
            .map(|mut b| {
                std::thread::spawn(move || {
                    b.put(&format!("addr-{}", b.rank()), &format!("v{}", b.rank())).unwrap();
                    b.fence().unwrap();
                    (0..b.size()).map(|r| b.get(&format!("addr-{r}")).unwrap()).collect::<Vec<_>>()
                })
            })
            .collect();
        for handle in handles {
            assert_eq!(handle.join().unwrap(), vec!["v0", "v1", "v2"]);
        }
    }
}
