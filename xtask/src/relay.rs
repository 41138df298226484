//! `xtask relay [--read] -- COMMAND...`: the proxy bench's floors. It runs `COMMAND` and
//! copies bytes between its own standard streams and the command's, each way on a thread of
//! its own, and does nothing else: what any process between a client and a server over stdio
//! costs (two more pipes, two more wake-ups a call), before it reads a byte of what it passes
//! on.
//!
//! With `--read` it reads each message as it passes: each line parsed as JSON and written
//! again from what was parsed (a line that is not JSON passed on as it came). That is the
//! least any process that looks at the messages does, before it does anything with them.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

/// Runs the relay as `args` say (`[--read] -- COMMAND...`), until the command's output ends
/// (it exited, or closed it after its input ended).
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let (read, args) = match args {
        ["--read", rest @ ..] => (true, rest),
        rest => (false, rest),
    };
    let command = match args {
        ["--", command @ ..] | command => command,
    };
    let (program, rest) = command
        .split_first()
        .ok_or("usage: cargo xtask relay [--read] -- COMMAND...")?;
    let mut child = Command::new(program)
        .args(rest)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|error| format!("cannot run `{program}`: {error}"))?;
    let (Some(mut into), Some(mut out_of)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(format!("`{program}` has no standard input and output"));
    };
    // Input on a thread of its own, left behind when the output ends: reading standard input
    // may block for as long as the client keeps it open.
    let pass: fn(&mut dyn Read, &mut dyn Write) -> Result<(), String> =
        if read { copy_messages } else { copy };
    // Nothing joins it: how the input ended does not change how the relay ends.
    std::thread::spawn(move || {
        let _ = pass(&mut std::io::stdin().lock(), &mut into);
        drop(into);
    });
    let back = pass(&mut out_of, &mut std::io::stdout().lock());
    let _ = child.wait();
    back
}

/// Copies `from` to `to` as it arrives, each read written and flushed at once, until `from`
/// ends (or `to` is closed, which ends the relay just the same).
fn copy(from: &mut dyn Read, to: &mut dyn Write) -> Result<(), String> {
    let mut buffer = vec![0; 1 << 16];
    loop {
        let read = match from.read(&mut buffer) {
            Ok(0) => return Ok(()),
            Ok(read) => read,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(error) => return Err(format!("the relay cannot read: {error}")),
        };
        if to
            .write_all(&buffer[..read])
            .and_then(|()| to.flush())
            .is_err()
        {
            return Ok(());
        }
    }
}

/// Copies `from` to `to` a line at a time, each line that is JSON parsed and written again
/// from what was parsed, each written and flushed at once, until `from` ends (or `to` is
/// closed).
fn copy_messages(from: &mut dyn Read, to: &mut dyn Write) -> Result<(), String> {
    let mut lines = BufReader::with_capacity(1 << 16, from);
    let mut line = Vec::new();
    loop {
        line.clear();
        // `read_until` retries an interrupted read itself.
        match lines.read_until(b'\n', &mut line) {
            Ok(0) => return Ok(()),
            Ok(_) => {}
            Err(error) => return Err(format!("the relay cannot read: {error}")),
        }
        let again = serde_json::from_slice::<serde_json::Value>(&line)
            .and_then(|message| serde_json::to_vec(&message))
            .map(|mut again| {
                again.push(b'\n');
                again
            });
        let out = again.as_deref().unwrap_or(&line);
        if to.write_all(out).and_then(|()| to.flush()).is_err() {
            return Ok(());
        }
    }
}
