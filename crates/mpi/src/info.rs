//! MPI_Info: ordered key/value lists. MPI_INFO_ENV is predefined and read-only: it describes how
//! the process was started. The MPI_Info_* calls are in [`abi`]. Info objects live outside the
//! runtime, since MPI 4 lets a program make them before MPI starts (to pass to
//! MPI_Session_init) and after it ends.

pub mod abi;

use std::sync::Mutex;

use crate::consts::*;
use crate::error::{error, MpiResult};

pub type Entries = Vec<(String, String)>;

/// The process's info objects, made at the first use.
static INFOS: Mutex<Option<InfoTable>> = Mutex::new(None);

/// Runs `f` on the process's info objects. Never called with the lock held: `f` must not call it.
pub fn with_infos<R>(f: impl FnOnce(&mut InfoTable) -> MpiResult<R>) -> MpiResult<R> {
    let mut infos = INFOS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(infos.get_or_insert_with(|| InfoTable::with_environment(environment(None))))
}

/// The entries of `info` (none for MPI_INFO_NULL).
pub fn entries(info: MPI_Info) -> MpiResult<Entries> {
    if info == MPI_INFO_NULL {
        return Ok(Entries::new());
    }
    with_infos(|infos| infos.get(info).cloned())
}

/// A new info object holding `entries` (what the MPI_*_get_info calls return).
pub fn create(entries: Entries) -> MpiResult<MPI_Info> {
    with_infos(|infos| Ok(infos.insert(entries)))
}

/// What MPI_INFO_ENV and MPI_Info_create_env hold (MPI 4.0 §11.2.4): the command and its
/// arguments (`args`, or this process's own), how many processes the job started with, the host,
/// the architecture and the working directory.
pub fn environment(args: Option<Vec<String>>) -> Entries {
    let args = args.unwrap_or_else(|| std::env::args().collect());
    let mut entries = Vec::new();
    if let Some(command) = args.first() {
        entries.push(("command".to_string(), command.clone()));
    }
    if args.len() > 1 {
        entries.push(("argv".to_string(), args[1..].join(" ")));
    }
    let size = std::env::var("PMI_SIZE").ok().filter(|size| size.parse::<u32>().is_ok()).unwrap_or_else(|| "1".to_string());
    entries.push(("maxprocs".to_string(), size));
    if let Ok(host) = std::fs::read_to_string("/proc/sys/kernel/hostname") {
        entries.push(("host".to_string(), host.trim().to_string()));
    }
    entries.push(("arch".to_string(), std::env::consts::ARCH.to_string()));
    if let Ok(directory) = std::env::current_dir() {
        entries.push(("wdir".to_string(), directory.to_string_lossy().into_owned()));
    }
    entries
}

/// MPI_Info handles: slot 0 is MPI_INFO_NULL, slot 1 MPI_INFO_ENV.
pub struct InfoTable {
    slots: Vec<Option<Entries>>,
}

impl Default for InfoTable {
    fn default() -> Self {
        InfoTable::new()
    }
}

impl InfoTable {
    pub fn new() -> InfoTable {
        InfoTable::with_environment(Vec::new())
    }

    /// A table whose MPI_INFO_ENV holds `environment`.
    pub fn with_environment(environment: Entries) -> InfoTable {
        InfoTable { slots: vec![None, Some(environment)] }
    }

    pub fn get(&self, info: MPI_Info) -> MpiResult<&Entries> {
        usize::try_from(info).ok().and_then(|i| self.slots.get(i)).and_then(|s| s.as_ref()).ok_or_else(|| error(MPI_COMM_WORLD, MPI_ERR_INFO, format!("{info} is not a valid info object")))
    }

    fn get_mut(&mut self, info: MPI_Info) -> MpiResult<&mut Entries> {
        if info == MPI_INFO_ENV {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_INFO, "MPI_INFO_ENV cannot be modified"));
        }
        self.get(info)?;
        Ok(self.slots[info as usize].as_mut().expect("checked above"))
    }

    pub fn insert(&mut self, entries: Entries) -> MPI_Info {
        match self.slots.iter().skip(2).position(|s| s.is_none()) {
            Some(free) => {
                self.slots[free + 2] = Some(entries);
                (free + 2) as MPI_Info
            }
            None => {
                self.slots.push(Some(entries));
                (self.slots.len() - 1) as MPI_Info
            }
        }
    }

    pub fn set(&mut self, info: MPI_Info, key: &str, value: &str) -> MpiResult<()> {
        check_key(key)?;
        if value.len() > MPI_MAX_INFO_VAL as usize {
            return Err(error(MPI_COMM_WORLD, MPI_ERR_INFO_VALUE, format!("the value of {key:?} is longer than MPI_MAX_INFO_VAL")));
        }
        let entries = self.get_mut(info)?;
        match entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.to_string(),
            None => entries.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }

    pub fn lookup(&self, info: MPI_Info, key: &str) -> MpiResult<Option<&str>> {
        check_key(key)?;
        Ok(self.get(info)?.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str()))
    }

    pub fn delete(&mut self, info: MPI_Info, key: &str) -> MpiResult<()> {
        check_key(key)?;
        let entries = self.get_mut(info)?;
        let index = entries.iter().position(|(k, _)| k == key).ok_or_else(|| error(MPI_COMM_WORLD, MPI_ERR_INFO_NOKEY, format!("key {key:?} is not set")))?;
        entries.remove(index);
        Ok(())
    }

    pub fn free(&mut self, info: MPI_Info) -> MpiResult<()> {
        self.get_mut(info)?;
        self.slots[info as usize] = None;
        Ok(())
    }
}

fn check_key(key: &str) -> MpiResult<()> {
    if key.is_empty() || key.len() > MPI_MAX_INFO_KEY as usize {
        return Err(error(MPI_COMM_WORLD, MPI_ERR_INFO_KEY, format!("key {key:?} is empty or longer than MPI_MAX_INFO_KEY")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_insertion_order_and_values_are_replaced() {
        let mut table = InfoTable::new();
        let info = table.insert(Vec::new());
        table.set(info, "b", "1").unwrap();
        table.set(info, "a", "2").unwrap();
        table.set(info, "b", "3").unwrap();
        assert_eq!(table.get(info).unwrap(), &vec![("b".to_string(), "3".to_string()), ("a".to_string(), "2".to_string())]);
        assert_eq!(table.lookup(info, "a").unwrap(), Some("2"));
        assert_eq!(table.lookup(info, "c").unwrap(), None);
    }

    #[test]
    fn errors_have_the_info_classes() {
        let mut table = InfoTable::new();
        let info = table.insert(Vec::new());
        assert_eq!(table.delete(info, "missing").unwrap_err().class, MPI_ERR_INFO_NOKEY);
        assert_eq!(table.set(info, &"k".repeat(300), "v").unwrap_err().class, MPI_ERR_INFO_KEY);
        assert_eq!(table.set(info, "k", &"v".repeat(2000)).unwrap_err().class, MPI_ERR_INFO_VALUE);
        assert_eq!(table.set(MPI_INFO_ENV, "k", "v").unwrap_err().class, MPI_ERR_INFO);
        assert_eq!(table.get(MPI_INFO_NULL).unwrap_err().class, MPI_ERR_INFO);
        table.free(info).unwrap();
        assert_eq!(table.get(info).unwrap_err().class, MPI_ERR_INFO);
        assert!(table.get(MPI_INFO_ENV).unwrap().is_empty());
    }

    #[test]
    fn the_environment_names_the_command_its_arguments_and_the_machine() {
        let entries = environment(Some(vec!["./solver".into(), "-n".into(), "4".into()]));
        let value = |key: &str| entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str());
        assert_eq!((value("command"), value("argv")), (Some("./solver"), Some("-n 4")));
        assert_eq!(value("arch"), Some(std::env::consts::ARCH));
        assert!(value("maxprocs").is_some_and(|n| n.parse::<u32>().is_ok()));
        assert!(value("wdir").is_some());
        assert_eq!(environment(Some(vec!["./alone".into()])).iter().filter(|(k, _)| k == "argv").count(), 0);
    }
}
