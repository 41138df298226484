//! `xtask relay -- COMMAND...`: the proxy bench's floor. It runs `COMMAND` and copies bytes
//! between its own standard streams and the command's, each way on a thread of its own, and
//! does nothing else: what any process between a client and a server over stdio costs (two
//! more pipes, two more wake-ups a call), before it reads a byte of what it passes on.

use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// Runs the relay as `args` say (`-- COMMAND...`), until either side closes.
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
    let back = std::thread::spawn(move || copy(&mut out_of, &mut std::io::stdout().lock()));
    let forth = copy(&mut std::io::stdin().lock(), &mut into);
    drop(into);
    let back = back.join().map_err(|_| "the relay's thread panicked")?;
    let _ = child.wait();
    forth.and(back)
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
