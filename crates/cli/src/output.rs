//! Forwarding a rank's stdout or stderr: whole lines only, so ranks' lines never mix, optionally
//! prefixed with `[rank] `.

use std::io::Write;

/// A partial line longer than this is written out anyway (a rank printing without newlines).
const LONGEST_HELD_LINE: usize = 64 * 1024;

/// Which of the launcher's streams a rank's stream goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Stdout,
    Stderr,
}

/// Holds a rank's bytes until a line is complete, then writes it to the launcher's stream.
pub struct LineForwarder {
    prefix: Option<String>,
    target: Target,
    pending: Vec<u8>,
}

impl LineForwarder {
    pub fn new(rank: u32, tag_output: bool, target: Target) -> LineForwarder {
        LineForwarder { prefix: tag_output.then(|| format!("[{rank}] ")), target, pending: Vec::new() }
    }

    /// Takes bytes the rank wrote and forwards every completed line.
    pub fn push(&mut self, bytes: &[u8]) {
        self.pending.extend_from_slice(bytes);
        let complete = match self.pending.iter().rposition(|&byte| byte == b'\n') {
            Some(last_newline) => last_newline + 1,
            None if self.pending.len() > LONGEST_HELD_LINE => self.pending.len(),
            None => return,
        };
        let text: Vec<u8> = self.pending.drain(..complete).collect();
        self.write(&text);
    }

    /// The rank closed the stream: forwards what is left, ending it with a newline when tagged.
    pub fn finish(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let mut rest = std::mem::take(&mut self.pending);
        if self.prefix.is_some() {
            rest.push(b'\n');
        }
        self.write(&rest);
    }

    fn write(&self, text: &[u8]) {
        let mut formatted = Vec::with_capacity(text.len() + 16);
        match &self.prefix {
            Some(prefix) => {
                for line in text.split_inclusive(|&byte| byte == b'\n') {
                    formatted.extend_from_slice(prefix.as_bytes());
                    formatted.extend_from_slice(line);
                }
            }
            None => formatted.extend_from_slice(text),
        }
        // The reader may be gone (a closed pipe); the ranks keep running regardless.
        let _ = match self.target {
            Target::Stdout => {
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(&formatted).and_then(|()| stdout.flush())
            }
            Target::Stderr => std::io::stderr().lock().write_all(&formatted),
        };
    }
}
