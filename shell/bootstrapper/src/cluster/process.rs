//! Running a command and streaming its output lines as they come (the cluster initializer/joiner's log).
//!
//! Standard output and standard error are read by one thread each and merged, line by line, in arrival
//! order; each line (invalid UTF-8 replaced, cut at [`MAX_LOG_LINE_LENGTH`]) goes to the caller's sink at
//! once, and the last [`FAILURE_TAIL_LINES`] are kept for the error when the command fails. Standard input is
//! `/dev/null`: nothing secret is ever passed to these commands except through files the caller wrote with
//! mode 0600.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;

/// Longest log line passed on, in bytes; longer lines are cut (and marked with `…`).
pub const MAX_LOG_LINE_LENGTH: usize = 4096;
/// Lines of output kept for the error of a failed command.
pub const FAILURE_TAIL_LINES: usize = 20;

/// Why a command failed.
#[derive(Debug)]
pub enum CommandError {
    /// It could not be started.
    Spawn {
        /// The program.
        program: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// It ran and failed.
    Failed {
        /// The program.
        program: PathBuf,
        /// Its exit status.
        status: ExitStatus,
        /// Its last lines of output (at most [`FAILURE_TAIL_LINES`]).
        tail: Vec<String>,
    },
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CommandError::Spawn { program, source } => write!(f, "cannot run {}: {source}", program.display()),
            CommandError::Failed { program, status, tail } => {
                write!(f, "{} failed ({status})", program.display())?;
                if !tail.is_empty() {
                    write!(f, "; last output lines:")?;
                    for l in tail {
                        write!(f, "\n  {l}")?;
                    }
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CommandError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CommandError::Spawn { source, .. } => Some(source),
            CommandError::Failed { .. } => None,
        }
    }
}

/// A line of output, lossily decoded, without its line ending, cut at [`MAX_LOG_LINE_LENGTH`].
fn decode_line(mut raw: &[u8]) -> String {
    while let [rest @ .., b'\n' | b'\r'] = raw {
        raw = rest;
    }
    let cut = raw.len() > MAX_LOG_LINE_LENGTH;
    let mut line = String::from_utf8_lossy(&raw[..raw.len().min(MAX_LOG_LINE_LENGTH)]).into_owned();
    if cut {
        line.push('…');
    }
    line
}

fn pump(stream: impl Read, tx: &mpsc::Sender<String>) {
    let mut reader = BufReader::new(stream);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if tx.send(decode_line(&buf)).is_err() {
                    return;
                }
            }
        }
    }
}

/// Runs `cmd`, passing each output line to `log` as it arrives. Succeeds when the command exits with 0.
pub fn run_streaming(mut cmd: Command, log: &mut dyn FnMut(&str)) -> Result<(), CommandError> {
    let program = PathBuf::from(cmd.get_program());
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| CommandError::Spawn { program: program.clone(), source })?;
    let (tx, rx) = mpsc::channel();
    let readers: Vec<_> = [
        child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
        child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|s| {
        let tx = tx.clone();
        std::thread::spawn(move || pump(s, &tx))
    })
    .collect();
    drop(tx);
    let mut tail = VecDeque::with_capacity(FAILURE_TAIL_LINES);
    for line in rx {
        log(&line);
        if tail.len() == FAILURE_TAIL_LINES {
            tail.pop_front();
        }
        tail.push_back(line);
    }
    for r in readers {
        let _ = r.join();
    }
    let status = child.wait().map_err(|source| CommandError::Spawn { program: program.clone(), source })?;
    if status.success() { Ok(()) } else { Err(CommandError::Failed { program, status, tail: tail.into() }) }
}

/// The first `name` in PATH that is a file, if any.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_lines_and_reports_failure_with_the_tail() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "for i in $(seq 1 30); do echo line $i; done; sleep 0.2; echo oops >&2; exit 3"]);
        let mut seen = Vec::new();
        let err = run_streaming(cmd, &mut |l| seen.push(l.to_owned())).unwrap_err();
        assert_eq!(seen.len(), 31);
        assert!(seen.contains(&"oops".to_owned()));
        match err {
            CommandError::Failed { status, tail, .. } => {
                assert_eq!(status.code(), Some(3));
                assert_eq!(tail.len(), FAILURE_TAIL_LINES);
                assert!(tail.contains(&"oops".to_owned()));
            }
            CommandError::Spawn { .. } => panic!("spawned"),
        }
    }

    #[test]
    fn success_missing_program_and_long_lines() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "printf 'a\\r\\nb'"]);
        let mut seen = Vec::new();
        run_streaming(cmd, &mut |l| seen.push(l.to_owned())).unwrap();
        assert_eq!(seen, ["a", "b"]);
        assert!(matches!(
            run_streaming(Command::new("/nonexistent/kubeadm"), &mut |_| {}),
            Err(CommandError::Spawn { .. })
        ));
        let long = decode_line(&vec![b'x'; MAX_LOG_LINE_LENGTH + 10]);
        assert!(long.ends_with('…'));
        assert!(find_on_path("sh").is_some());
        assert!(find_on_path("attest-no-such-program").is_none());
    }
}
