//! The PMI-1 "simple" wire format: one command per line, `cmd=NAME key=value key=value\n`.
//!
//! Words are separated by spaces. A word without `=` continues the previous value, so a free-form
//! last value such as `error_msg=out of memory` survives the trip (MPICH's clients send abort
//! messages that way). Keys never contain spaces or `=`; values never contain a newline.

use std::fmt;

/// Longest line accepted; PMI-1 values are at most 1024 bytes, so this only stops runaway input.
pub const MAX_LINE: usize = 64 * 1024;

/// Limits this implementation advertises in `cmd=maxes` and enforces on puts.
pub const KVSNAME_MAX: usize = 256;
pub const KEY_MAX: usize = 64;
pub const VALUE_MAX: usize = 1024;

/// A malformed line or an unusable key or value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The line does not start with `cmd=` (or `mcmd=`) and a name.
    NoCommand(String),
    /// The line has a word with an empty key, such as `=value`.
    EmptyKey(String),
    /// A line longer than [`MAX_LINE`] without a newline.
    LineTooLong(usize),
    /// A key or value that cannot be written on the wire.
    Unwritable { key: String, reason: &'static str },
    /// A reply lacked a key the protocol requires.
    MissingKey { command: String, key: String },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::NoCommand(line) => write!(f, "PMI line without a command: {line:?}"),
            WireError::EmptyKey(line) => write!(f, "PMI line with an empty key: {line:?}"),
            WireError::LineTooLong(len) => write!(f, "PMI line longer than {MAX_LINE} bytes ({len} bytes so far)"),
            WireError::Unwritable { key, reason } => write!(f, "cannot send PMI key {key:?}: {reason}"),
            WireError::MissingKey { command, key } => write!(f, "PMI reply cmd={command} lacks {key}="),
        }
    }
}

impl std::error::Error for WireError {}

/// One PMI command or reply: its name and its `key=value` pairs, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    command: String,
    pairs: Vec<(String, String)>,
}

impl Message {
    /// A message `cmd=command` with no other pairs.
    pub fn new(command: &str) -> Message {
        Message { command: command.to_string(), pairs: Vec::new() }
    }

    /// Appends `key=value`.
    pub fn with(mut self, key: &str, value: impl fmt::Display) -> Message {
        self.pairs.push((key.to_string(), value.to_string()));
        self
    }

    /// The command name (the value of `cmd=`).
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The value of `key` (the first one, if repeated).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs.iter().find(|(name, _)| name == key).map(|(_, value)| value.as_str())
    }

    /// The value of `key`, or an error naming the command and key.
    pub fn require(&self, key: &str) -> Result<&str, WireError> {
        self.get(key).ok_or_else(|| WireError::MissingKey { command: self.command.clone(), key: key.to_string() })
    }

    /// All pairs after the command, in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// Parses one line (with or without its newline).
    pub fn parse(line: &str) -> Result<Message, WireError> {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let mut words = line.split(' ').filter(|word| !word.is_empty());
        let command = match words.next().and_then(|first| first.split_once('=')) {
            Some(("cmd" | "mcmd", name)) if !name.is_empty() => name.to_string(),
            _ => return Err(WireError::NoCommand(line.to_string())),
        };
        let mut pairs: Vec<(String, String)> = Vec::new();
        for word in words {
            match word.split_once('=') {
                Some(("", _)) => return Err(WireError::EmptyKey(line.to_string())),
                Some((key, value)) => pairs.push((key.to_string(), value.to_string())),
                None => match pairs.last_mut() {
                    Some((_, value)) => {
                        value.push(' ');
                        value.push_str(word);
                    }
                    None => return Err(WireError::EmptyKey(line.to_string())),
                },
            }
        }
        Ok(Message { command, pairs })
    }

    /// The line to send, newline included. Fails on keys with spaces or `=`, and on newlines.
    pub fn to_line(&self) -> Result<String, WireError> {
        check_word("cmd", &self.command)?;
        let mut line = format!("cmd={}", self.command);
        for (key, value) in &self.pairs {
            if key.is_empty() || key.contains([' ', '=', '\n']) {
                return Err(WireError::Unwritable { key: key.clone(), reason: "keys must be non-empty, without spaces or '='" });
            }
            if value.contains(['\n', '\r']) {
                return Err(WireError::Unwritable { key: key.clone(), reason: "values cannot contain a newline" });
            }
            line.push(' ');
            line.push_str(key);
            line.push('=');
            line.push_str(value);
        }
        line.push('\n');
        Ok(line)
    }
}

/// Checks that `text` is usable as a single PMI word (a key, or a value that must not merge with
/// what follows): non-empty, no spaces, `=` or newlines.
pub fn check_word(name: &str, text: &str) -> Result<(), WireError> {
    if text.is_empty() || text.contains([' ', '=', '\n', '\r']) {
        return Err(WireError::Unwritable { key: name.to_string(), reason: "must be non-empty, without spaces, '=' or newlines" });
    }
    Ok(())
}

/// Splits a byte stream into lines: feed it what `read` returned, then take complete lines.
#[derive(Debug, Default)]
pub struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    pub fn new() -> LineBuffer {
        LineBuffer::default()
    }

    /// Appends bytes read from the stream.
    pub fn extend(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
    }

    /// The next complete line without its newline; `Ok(None)` until one has arrived.
    /// Invalid UTF-8 is replaced rather than refused: PMI text is ASCII.
    pub fn next_line(&mut self) -> Result<Option<String>, WireError> {
        match self.pending.iter().position(|&byte| byte == b'\n') {
            Some(end) => {
                let line = String::from_utf8_lossy(&self.pending[..end]).into_owned();
                self.pending.drain(..=end);
                Ok(Some(line))
            }
            None if self.pending.len() > MAX_LINE => Err(WireError::LineTooLong(self.pending.len())),
            None => Ok(None),
        }
    }

    /// Bytes received after the last complete line.
    pub fn partial(&self) -> &[u8] {
        &self.pending
    }
}

/// Hostile lines from a launcher or a rank: parsing answers without panicking, a parsed message
/// that can be written again reads back the same, and the line buffer hands out lines whatever
/// the bytes and however they are cut. The case count follows PROPTEST_CASES (scripts/fuzz runs
/// 10^7).
#[cfg(test)]
mod hostile {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn any_line_parses_or_is_refused_and_parsed_lines_round_trip(line in "(cmd=|mcmd=)?[ -~\\n\\r=\\x{e9}]{0,80}") {
            if let Ok(message) = Message::parse(&line) {
                if let Ok(written) = message.to_line() {
                    prop_assert_eq!(Message::parse(&written).ok(), Some(message));
                }
            }
        }

        #[test]
        fn any_bytes_in_any_pieces_come_out_as_lines_or_errors(pieces in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..48), 0..12)) {
            let mut buffer = LineBuffer::new();
            for piece in &pieces {
                buffer.extend(piece);
                for _ in 0..64 {
                    match buffer.next_line() {
                        Ok(Some(line)) => {
                            let _ = Message::parse(&line);
                        }
                        Ok(None) | Err(_) => break,
                    }
                }
            }
            prop_assert!(buffer.partial().len() <= pieces.iter().map(Vec::len).sum::<usize>());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip() {
        let message = Message::new("put").with("kvsname", "kvs_1_2").with("key", "addr-0").with("value", "shm:/braid-x-0");
        let line = message.to_line().unwrap();
        assert_eq!(line, "cmd=put kvsname=kvs_1_2 key=addr-0 value=shm:/braid-x-0\n");
        assert_eq!(Message::parse(&line).unwrap(), message);
    }

    #[test]
    fn hydra_replies_parse() {
        let reply = Message::parse("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0").unwrap();
        assert_eq!(reply.command(), "response_to_init");
        assert_eq!(reply.get("rc"), Some("0"));
        assert_eq!(reply.get("missing"), None);
        let maxes = Message::parse("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n").unwrap();
        assert_eq!(maxes.require("vallen_max").unwrap(), "1024");
        assert!(matches!(maxes.require("rc"), Err(WireError::MissingKey { .. })));
        let empty_value = Message::parse("cmd=get_result rc=0 value=").unwrap();
        assert_eq!(empty_value.get("value"), Some(""));
        let multi = Message::parse("mcmd=spawn nprocs=2").unwrap();
        assert_eq!(multi.command(), "spawn");
    }

    #[test]
    fn a_free_form_last_value_keeps_its_spaces() {
        let abort = Message::new("abort").with("exitcode", 5).with("error_msg", "out of memory in rank 2");
        let parsed = Message::parse(&abort.to_line().unwrap()).unwrap();
        assert_eq!(parsed.get("exitcode"), Some("5"));
        assert_eq!(parsed.get("error_msg"), Some("out of memory in rank 2"));
    }

    #[test]
    fn malformed_lines_and_unwritable_pairs_are_refused() {
        assert!(matches!(Message::parse("hello"), Err(WireError::NoCommand(_))));
        assert!(matches!(Message::parse("cmd="), Err(WireError::NoCommand(_))));
        assert!(matches!(Message::parse("key=value cmd=put"), Err(WireError::NoCommand(_))));
        assert!(matches!(Message::parse("cmd=put =x"), Err(WireError::EmptyKey(_))));
        assert!(Message::new("put").with("a b", 1).to_line().is_err());
        assert!(Message::new("put").with("key", "two\nlines").to_line().is_err());
        assert!(Message::new("bad cmd").to_line().is_err());
        assert!(check_word("key", "has space").is_err());
        assert!(check_word("key", "").is_err());
        assert!(check_word("key", "fine-key_1").is_ok());
    }

    #[test]
    fn lines_are_split_across_reads() {
        let mut buffer = LineBuffer::new();
        buffer.extend(b"cmd=barrier_out rc=0\ncmd=get_res");
        assert_eq!(buffer.next_line().unwrap().as_deref(), Some("cmd=barrier_out rc=0"));
        assert_eq!(buffer.next_line().unwrap(), None);
        buffer.extend(b"ult rc=0 value=x\n");
        assert_eq!(buffer.next_line().unwrap().as_deref(), Some("cmd=get_result rc=0 value=x"));
        assert_eq!(buffer.next_line().unwrap(), None);
        assert!(buffer.partial().is_empty());
        buffer.extend(&vec![b'a'; MAX_LINE + 1]);
        assert!(matches!(buffer.next_line(), Err(WireError::LineTooLong(_))));
    }
}
