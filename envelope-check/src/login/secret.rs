//! A secret (a client secret, an access token) that never shows: its `Debug` and `Display`
//! print `[redacted]`, and its memory is wiped when it is dropped. Read from a file with a
//! bound, so a wrong path (a log, a disk image) fails at once instead of filling memory.

use std::fmt;
use std::fs::File;
use std::io::{ErrorKind, Read as _};
use std::path::Path;

use zeroize::Zeroizing;

use crate::LoginError;

/// The largest secret file read: 64 KiB, far past any client secret or bearer token.
pub const MAX_SECRET_BYTES: usize = 64 << 10;

/// Opens `path` for reading without waiting on it: a FIFO (or a device) named as a secret's
/// file opens at once, with nobody writing to it, and is then refused as not a regular file;
/// a blocking open would wait for a writer forever.
#[cfg(unix)]
fn open_without_waiting(path: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// Opens `path` for reading (elsewhere than Unix an open does not wait on a pipe's writer).
#[cfg(not(unix))]
fn open_without_waiting(path: &Path) -> std::io::Result<File> {
    File::open(path)
}

/// What a file that is not a regular file is, for the error that refuses it.
fn kind_of(file_type: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a FIFO";
        }
        if file_type.is_socket() {
            return "a socket";
        }
        if file_type.is_char_device() || file_type.is_block_device() {
            return "a device";
        }
    }
    if file_type.is_dir() {
        "a directory"
    } else {
        "something else"
    }
}

/// A client secret or an access token. Only [`expose`](Secret::expose) shows it, for the one
/// place that sends it; everything else sees `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Zeroizing<String>);

impl Secret {
    /// `text` as a secret.
    pub fn new(text: impl Into<String>) -> Self {
        Secret(Zeroizing::new(text.into()))
    }

    /// The secret itself, to send it; never to print it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The secret in the file at `path`, `what` naming it in errors ("client secret"): a
    /// regular file of at most [`MAX_SECRET_BYTES`] of UTF-8, one trailing line ending
    /// dropped, not empty.
    pub fn read_file(path: &Path, what: &'static str) -> Result<Secret, LoginError> {
        let unreadable = |source| LoginError::FileUnreadable {
            what,
            path: path.to_owned(),
            source,
        };
        let file = open_without_waiting(path).map_err(|source| match source.kind() {
            ErrorKind::NotFound => LoginError::FileMissing {
                what,
                path: path.to_owned(),
            },
            _ => unreadable(source),
        })?;
        let metadata = file.metadata().map_err(unreadable)?;
        if !metadata.is_file() {
            return Err(LoginError::NotAFile {
                what,
                path: path.to_owned(),
                kind: kind_of(&metadata.file_type()),
            });
        }
        // One byte past the limit tells a file at the limit from a longer one.
        let mut bytes = Zeroizing::new(Vec::new());
        file.take(MAX_SECRET_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(unreadable)?;
        if bytes.len() > MAX_SECRET_BYTES {
            return Err(LoginError::FileTooLarge {
                what,
                path: path.to_owned(),
                limit: MAX_SECRET_BYTES,
            });
        }
        let Ok(text) = std::str::from_utf8(&bytes) else {
            return Err(LoginError::FileNotUtf8 {
                what,
                path: path.to_owned(),
            });
        };
        // An editor's or `echo`'s final line ending is no part of the secret; anything else is.
        let text = text
            .strip_suffix('\n')
            .map_or(text, |line| line.strip_suffix('\r').unwrap_or(line));
        if text.is_empty() {
            return Err(LoginError::FileEmpty {
                what,
                path: path.to_owned(),
            });
        }
        Ok(Secret::new(text))
    }

    /// The bearer token in the file at `path`: as [`read_file`](Secret::read_file), and one
    /// run of visible ASCII, which an HTTP header carries as is.
    pub fn read_token_file(path: &Path) -> Result<Secret, LoginError> {
        let what = "bearer token";
        let token = Secret::read_file(path, what)?;
        if !token.is_header_safe() {
            return Err(LoginError::NotAToken {
                what,
                path: path.to_owned(),
            });
        }
        Ok(token)
    }

    /// Whether the secret can be sent as a bearer token: one run of visible ASCII (RFC 6750's
    /// `b64token` is a subset), which an HTTP header carries as is.
    pub(crate) fn is_header_safe(&self) -> bool {
        !self.0.is_empty() && self.0.bytes().all(|byte| byte.is_ascii_graphic())
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret([redacted])")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of `bytes` in a fresh directory of the system's temporary directory.
    fn file_of(name: &str, bytes: &[u8]) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "envelope-check-secret-{}-{name}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let path = dir.join("secret");
        std::fs::write(&path, bytes).expect("the file is written");
        path
    }

    #[test]
    fn a_secret_never_shows() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret}"), "[redacted]");
        assert_eq!(format!("{secret:?}"), "Secret([redacted])");
        assert_eq!(
            format!("{:?}", Some(secret.clone())),
            "Some(Secret([redacted]))"
        );
        assert_eq!(secret.expose(), "hunter2");
    }

    #[test]
    fn one_trailing_line_ending_is_dropped() {
        let read = |name, bytes| Secret::read_file(&file_of(name, bytes), "client secret");
        assert_eq!(read("lf", b"s3cret\n").expect("read").expose(), "s3cret");
        assert_eq!(
            read("crlf", b"s3cret\r\n").expect("read").expose(),
            "s3cret"
        );
        assert_eq!(
            read("two", b"s3cret\n\n").expect("read").expose(),
            "s3cret\n"
        );
        assert_eq!(
            read("none", b" s3cret ").expect("read").expose(),
            " s3cret "
        );
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let read = |path: &Path| Secret::read_file(path, "client secret");
        let empty = read(&file_of("empty", b"")).expect_err("empty");
        assert!(matches!(empty, LoginError::FileEmpty { .. }), "{empty}");
        let newline = read(&file_of("newline", b"\n")).expect_err("only a newline");
        assert!(matches!(newline, LoginError::FileEmpty { .. }), "{newline}");
        let latin1 = read(&file_of("latin1", b"caf\xe9")).expect_err("not UTF-8");
        assert!(matches!(latin1, LoginError::FileNotUtf8 { .. }), "{latin1}");
        let large = read(&file_of("large", &[b'a'; MAX_SECRET_BYTES + 1])).expect_err("large");
        assert!(matches!(large, LoginError::FileTooLarge { .. }), "{large}");
        assert!(read(&file_of("limit", &[b'a'; MAX_SECRET_BYTES])).is_ok());
        let path = file_of("dir", b"x");
        let dir = path.parent().expect("in a directory");
        let directory = read(dir).expect_err("a directory");
        assert!(
            directory.to_string().contains("is a directory"),
            "{directory}"
        );
        let missing = read(&dir.join("nothing-here")).expect_err("missing");
        assert!(missing.to_string().contains("does not exist"), "{missing}");
    }

    /// A FIFO with no writer, a device and a socket are refused at once: the read runs on a
    /// thread of its own, and the test fails if it has not answered within ten seconds (a
    /// blocking open would wait for a writer forever).
    #[cfg(unix)]
    #[test]
    fn a_fifo_a_device_or_a_socket_is_refused_without_waiting() {
        let dir = file_of("fifo", b"x");
        let dir = dir.parent().expect("in a directory");
        let fifo = dir.join("pipe");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", fifo.display());
        let socket_path = dir.join("socket");
        let _ = std::fs::remove_file(&socket_path);
        let _socket =
            std::os::unix::net::UnixListener::bind(&socket_path).expect("a socket is bound");
        for (path, kind) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a device"),
            (socket_path.as_path(), ""),
        ] {
            let (sent, answer) = std::sync::mpsc::channel();
            let owned = path.to_owned();
            std::thread::spawn(move || {
                let _ = sent.send(Secret::read_file(&owned, "client secret").map(|_| ()));
            });
            let refused = answer
                .recv_timeout(std::time::Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("reading {} waited", path.display()))
                .expect_err("not a regular file");
            // A socket cannot be opened at all: it is refused as unreadable, at once.
            match refused {
                LoginError::NotAFile { kind: found, .. } => assert_eq!(found, kind, "{path:?}"),
                LoginError::FileUnreadable { .. } => assert_eq!(kind, "", "{path:?}"),
                other => panic!("{}: {other}", path.display()),
            }
        }
    }

    #[test]
    fn a_bearer_token_is_one_run_of_visible_ascii() {
        assert!(Secret::new("eyJhbGciOi.J9-_~+/=").is_header_safe());
        assert!(!Secret::new("two\nlines").is_header_safe());
        assert!(!Secret::new("with space").is_header_safe());
        assert!(!Secret::new("é").is_header_safe());
    }
}
