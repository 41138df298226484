//! `xtask relay -- COMMAND...`: the proxy bench's floor. It runs `COMMAND` and copies bytes
//! between its own standard streams and the command's, each way on a thread of its own, and
//! does nothing else: what any process between a client and a server over stdio costs (two
//! more pipes, two more wake-ups a call), before it reads a byte of what it passes on.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// Runs the relay as `args` say (`-- COMMAND...`), until the command's output ends (it exited,
/// or closed it after its input ended).
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let command = match args {
        ["--", command @ ..] | command => command,
    };
    let (program, rest) = command
        .split_first()
        .ok_or("usage: cargo xtask relay -- COMMAND...")?;
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
    std::thread::spawn(move || {
        let forth = copy(&mut std::io::stdin().lock(), &mut into);
        drop(into);
        forth
    });
    let back = copy(&mut out_of, &mut std::io::stdout().lock());
    let _ = child.wait();
    back
}

/// Copies `from` to `to` as it arrives, each read written and flushed at once, until `from`
/// ends (or `to` is closed, which ends the relay just the same).
fn copy(from: &mut impl Read, to: &mut impl Write) -> Result<(), String> {
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
