//! Forwarding a rank's stdout or stderr: whole lines only, so ranks' lines never mix, optionally
//! prefixed with `[rank] `.

use std::fs::File;
use std::io::{ErrorKind, Write};
use std::os::fd::AsFd;
use std::sync::OnceLock;

use braid_sys::fd;

/// A partial line longer than this is written out anyway (a rank printing without newlines).
const LONGEST_HELD_LINE: usize = 1 << 20;

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
        let held = self.pending.len();
        self.pending.extend_from_slice(bytes);
        // Only the new bytes can hold the last newline: the held ones had none.
        let complete = match bytes.iter().rposition(|&byte| byte == b'\n') {
            Some(last_newline) => held + last_newline + 1,
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
        if let Some(stream) = launcher_stream(self.target) {
            write_whole(stream, &formatted);
        }
    }
}

/// The launcher's stdout or stderr, written to directly: the lines are already whole, so the
/// standard library's buffering would only add a copy.
fn launcher_stream(target: Target) -> Option<&'static File> {
    static STDOUT: OnceLock<Option<File>> = OnceLock::new();
    static STDERR: OnceLock<Option<File>> = OnceLock::new();
    // A duplicate shares the stream's open file (its offset and flags), so it writes where the
    // stream writes; a closed stream gives none, and its output is dropped.
    match target {
        Target::Stdout => STDOUT.get_or_init(|| std::io::stdout().as_fd().try_clone_to_owned().ok().map(File::from)).as_ref(),
        Target::Stderr => STDERR.get_or_init(|| std::io::stderr().as_fd().try_clone_to_owned().ok().map(File::from)).as_ref(),
    }
}

/// Writes all of `bytes`, waiting while the stream is full: the launcher's stream may be
/// non-blocking (it shares its open file with whoever set O_NONBLOCK on it), and a write refused
/// with EAGAIN must not drop the rest of a line. A reader that is gone (EPIPE) ends the write;
/// the ranks keep running regardless.
fn write_whole(mut stream: &File, mut bytes: &[u8]) {
    while !bytes.is_empty() {
        match stream.write(bytes) {
            Ok(0) => return,
            Ok(written) => bytes = &bytes[written..],
            Err(error) if error.kind() == ErrorKind::Interrupted => {}
            Err(error) if error.kind() == ErrorKind::WouldBlock => {
                if fd::wait_writable(stream.as_fd(), None).is_err() {
                    return;
                }
            }
            Err(_) => return,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_non_blocking_stream_gets_every_byte_even_when_full() {
        let (mut reader, writer) = UnixStream::pair().unwrap();
        writer.set_nonblocking(true).unwrap();
        let writer = File::from(OwnedFd::from(writer));
        let text: Vec<u8> = (0..1_000_000u32).map(|index| b'a' + (index % 26) as u8).collect();
        let expected = text.clone();
        let slow_reader = std::thread::spawn(move || {
            let mut received = Vec::new();
            let mut chunk = [0u8; 1000];
            loop {
                std::thread::sleep(std::time::Duration::from_micros(50));
                match reader.read(&mut chunk).unwrap() {
                    0 => return received,
                    read => received.extend_from_slice(&chunk[..read]),
                }
            }
        });
        write_whole(&writer, &text);
        drop(writer);
        assert!(slow_reader.join().unwrap() == expected, "bytes were lost or reordered");
    }
}
