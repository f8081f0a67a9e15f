//! PMI-1's spawn command (`PMI_Spawn_multiple`, as MPICH's simple PMI sends it and Hydra serves
//! it): one multi-line block per command, each line `key=value` (a value may hold spaces and
//! `=`), from `mcmd=spawn` to `endcmd`:
//!
//! ```text
//! mcmd=spawn
//! nprocs=2
//! execname=./worker
//! totspawns=1
//! spawnssofar=1
//! arg1=--size
//! arg2=10
//! argcnt=2
//! preput_num=1
//! preput_key_0=PARENT_ROOT_PORT_NAME
//! preput_val_0=braid-port:127.0.0.1:40000
//! info_num=1
//! info_key_0=wdir
//! info_val_0=/tmp
//! endcmd
//! ```
//!
//! The launcher answers the last block (`spawnssofar == totspawns`) with
//! `cmd=spawn_result rc=0`, or a non-zero `rc` and a `msg`.

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::wire::WireError;

/// The key-value space entry through which spawned processes learn their parents' port (the
/// name MPICH uses, so that either side may be MPICH's).
pub const PARENT_PORT_KEY: &str = "PARENT_ROOT_PORT_NAME";

/// One command of a spawn: `nprocs` copies of `execname` with `args`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnCommand {
    pub execname: String,
    pub nprocs: u32,
    pub args: Vec<String>,
    /// The MPI_Info of the command (`wdir`, `path`, ...).
    pub info: Vec<(String, String)>,
}

/// A whole spawn: its commands (their processes form one new job, in order) and the values put
/// in the new job's key-value space before it starts.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SpawnRequest {
    pub commands: Vec<SpawnCommand>,
    pub preput: Vec<(String, String)>,
}

impl SpawnCommand {
    /// The value of the command's MPI_Info key `key`.
    pub fn info(&self, key: &str) -> Option<&str> {
        self.info.iter().find(|(name, _)| name == key).map(|(_, value)| value.as_str())
    }

    /// The program the command starts, found as MPI's reserved info keys `wdir` (where a
    /// relative path starts) and `path` (where a bare name is looked up; else this process's
    /// PATH) direct; None when there is no such executable.
    pub fn program(&self) -> Option<PathBuf> {
        let search = self.info("path").map(OsString::from).or_else(|| std::env::var_os("PATH")).unwrap_or_default();
        braid_sys::executable::find_executable(&self.execname, self.info("wdir").map(Path::new), &search)
    }
}

impl SpawnRequest {
    /// Every process of the new job.
    pub fn processes(&self) -> u32 {
        self.commands.iter().map(|command| command.nprocs).sum()
    }

    /// The blocks to send, one per command, each ending with `endcmd\n`. Fails on a newline in
    /// any text, or on keys that would not parse back.
    pub fn to_blocks(&self) -> Result<Vec<String>, WireError> {
        let unwritable = |key: &str, reason| WireError::Unwritable { key: key.to_string(), reason };
        let check = |key: &str, text: &str| if text.contains(['\n', '\r']) { Err(unwritable(key, "values cannot contain a newline")) } else { Ok(()) };
        let check_key = |key: &str| if key.is_empty() || key.contains(['=', '\n', '\r', ' ']) { Err(unwritable(key, "keys must be non-empty, without spaces or '='")) } else { Ok(()) };
        let total = self.commands.len();
        let mut blocks = Vec::with_capacity(total);
        for (index, command) in self.commands.iter().enumerate() {
            check("execname", &command.execname)?;
            let mut block = format!("mcmd=spawn\nnprocs={}\nexecname={}\ntotspawns={total}\nspawnssofar={}\n", command.nprocs, command.execname, index + 1);
            for (number, arg) in command.args.iter().enumerate() {
                check("arg", arg)?;
                let _ = writeln!(block, "arg{}={arg}", number + 1);
            }
            let _ = writeln!(block, "argcnt={}\npreput_num={}", command.args.len(), self.preput.len());
            for (number, (key, value)) in self.preput.iter().enumerate() {
                check_key(key)?;
                check(key, value)?;
                let _ = writeln!(block, "preput_key_{number}={key}\npreput_val_{number}={value}");
            }
            let _ = writeln!(block, "info_num={}", command.info.len());
            for (number, (key, value)) in command.info.iter().enumerate() {
                check_key(key)?;
                check(key, value)?;
                let _ = writeln!(block, "info_key_{number}={key}\ninfo_val_{number}={value}");
            }
            block.push_str("endcmd\n");
            blocks.push(block);
        }
        Ok(blocks)
    }
}

/// One parsed block: its command, the preput values, and where it stands among the blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnBlock {
    pub command: SpawnCommand,
    pub preput: Vec<(String, String)>,
    /// `spawnssofar`: 1 for the first block.
    pub number: u32,
    /// `totspawns`.
    pub total: u32,
}

/// Splits a block's line at its first `=`.
pub fn block_line(line: &str) -> Result<(String, String), WireError> {
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    match line.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(WireError::EmptyKey(line.to_string())),
    }
}

/// Parses the lines of one block, between `mcmd=spawn` and `endcmd` (both excluded).
pub fn parse_block(lines: &[(String, String)]) -> Result<SpawnBlock, WireError> {
    let get = |key: &str| lines.iter().find(|(name, _)| name == key).map(|(_, value)| value.as_str());
    let missing = |key: &str| WireError::MissingKey { command: "spawn".into(), key: key.into() };
    let number = |key: &str| -> Result<u32, WireError> { get(key).ok_or_else(|| missing(key))?.trim().parse().map_err(|_| missing(key)) };
    let indexed = |prefix: &str, count: u32, from: u32| -> Result<Vec<String>, WireError> {
        (from..from + count).map(|i| get(&format!("{prefix}{i}")).map(str::to_string).ok_or_else(|| missing(&format!("{prefix}{i}")))).collect()
    };
    let pairs = |what: &str, count: u32| -> Result<Vec<(String, String)>, WireError> {
        let keys = indexed(&format!("{what}_key_"), count, 0)?;
        let values = indexed(&format!("{what}_val_"), count, 0)?;
        Ok(keys.into_iter().zip(values).collect())
    };
    let execname = get("execname").ok_or_else(|| missing("execname"))?.to_string();
    let command = SpawnCommand { execname, nprocs: number("nprocs")?, args: indexed("arg", number("argcnt")?, 1)?, info: pairs("info", number("info_num").unwrap_or(0))? };
    Ok(SpawnBlock { command, preput: pairs("preput", number("preput_num").unwrap_or(0))?, number: number("spawnssofar")?, total: number("totspawns")? })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Parses blocks as a server reads them.
    fn parse_blocks(blocks: &[String]) -> Vec<SpawnBlock> {
        blocks
            .iter()
            .map(|block| {
                let lines: Vec<&str> = block.lines().collect();
                assert_eq!((lines[0], *lines.last().unwrap()), ("mcmd=spawn", "endcmd"));
                let pairs: Vec<(String, String)> = lines[1..lines.len() - 1].iter().map(|line| block_line(line).unwrap()).collect();
                parse_block(&pairs).unwrap()
            })
            .collect()
    }

    #[test]
    fn a_block_reads_as_mpichs_simple_pmi_writes_it() {
        let lines =
            ["nprocs=2", "execname=./worker", "totspawns=1", "spawnssofar=1", "arg1=a b=c", "argcnt=1", "preput_num=1", "preput_key_0=PARENT_ROOT_PORT_NAME", "preput_val_0=tag#0$port", "info_num=0"];
        let pairs: Vec<(String, String)> = lines.iter().map(|line| block_line(line).unwrap()).collect();
        let block = parse_block(&pairs).unwrap();
        assert_eq!(block.command, SpawnCommand { execname: "./worker".into(), nprocs: 2, args: vec!["a b=c".into()], info: vec![] });
        assert_eq!(block.preput, vec![(PARENT_PORT_KEY.to_string(), "tag#0$port".to_string())]);
        assert_eq!((block.number, block.total), (1, 1));
        assert!(parse_block(&pairs[1..]).is_err(), "a block without nprocs is refused");
    }

    proptest! {
        #[test]
        fn requests_round_trip(
            commands in proptest::collection::vec(("[./a-z]{1,12}", 1u32..64, proptest::collection::vec("[ -~]{0,16}", 0..4), proptest::collection::vec(("[a-z_]{1,8}", "[ -~]{0,12}"), 0..3)), 1..4),
            preput in proptest::collection::vec(("[A-Z_]{1,12}", "[ -~]{0,20}"), 0..3),
        ) {
            let request = SpawnRequest {
                commands: commands.into_iter().map(|(execname, nprocs, args, info)| SpawnCommand { execname, nprocs, args, info }).collect(),
                preput,
            };
            let blocks = parse_blocks(&request.to_blocks().unwrap());
            for (index, block) in blocks.iter().enumerate() {
                prop_assert_eq!(&block.command, &request.commands[index]);
                prop_assert_eq!(&block.preput, &request.preput);
                prop_assert_eq!((block.number, block.total), (index as u32 + 1, request.commands.len() as u32));
            }
        }
    }
}
