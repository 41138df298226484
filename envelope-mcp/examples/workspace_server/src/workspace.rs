//! The served directory tree, held open, and how a file in it is read: its text, and its
//! [`FileStamp`] (size and time), which the walk takes for every file it lists too.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use cap_std::fs::{Dir, OpenOptions};
use envelope_core::paging::Snapshot;

/// Files larger than this are skipped by walks and refused by `read_file`.
pub(crate) const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// The served directory, shared with every tool as server state.
#[derive(Debug)]
pub struct Workspace {
    /// Canonical (symlinks resolved): how absolute paths in requests are recognized, and the
    /// scope continuations are bound to.
    pub(crate) root: PathBuf,
    /// The root, held open: everything is opened beneath it.
    pub(crate) dir: Dir,
}

impl Workspace {
    /// The workspace rooted at `root`, which must be a directory.
    pub fn open(root: impl AsRef<Path>) -> io::Result<Workspace> {
        let root = root.as_ref().canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        Ok(Workspace { root, dir })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// What `rel` is, symlinks followed without leaving the root; nothing is opened for read.
    pub(crate) fn metadata(&self, rel: &str) -> io::Result<cap_std::fs::Metadata> {
        self.dir.metadata(rel)
    }

    /// The text of the regular file at `rel`, opened beneath the root. What is opened is
    /// checked again, so a file swapped since the walk (for a FIFO, a device or a larger file)
    /// is not read: the open does not wait for a FIFO's writer, and no more than
    /// [`MAX_FILE_BYTES`] is ever read.
    pub(crate) fn read_text(&self, rel: &str) -> Contents {
        self.read_stamped(rel).0
    }

    /// [`Workspace::read_text`], and the stamp of the file it opened (its size and time, from
    /// the open file: no second lookup of the path), when it could be opened. A file over
    /// [`MAX_FILE_BYTES`] is not read, and its stamp says so.
    pub(crate) fn read_stamped(&self, rel: &str) -> (Contents, Option<FileStamp>) {
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        cap_std::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
        let mut stamp = None;
        let mut read = || -> io::Result<Vec<u8>> {
            let file = self.dir.open_with(rel, &options)?;
            let metadata = file.metadata()?;
            stamp = Some(FileStamp::of(&metadata));
            if !metadata.is_file() || metadata.len() > MAX_FILE_BYTES {
                return Err(io::Error::other(format!(
                    "`{rel}` is no longer a regular file of at most {MAX_FILE_BYTES} bytes"
                )));
            }
            let mut bytes = Vec::with_capacity(metadata.len() as usize);
            file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > MAX_FILE_BYTES {
                return Err(io::Error::other(format!("`{rel}` grew while being read")));
            }
            Ok(bytes)
        };
        let contents = match read() {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Contents::Text(text),
                Err(_) => Contents::Binary,
            },
            Err(error) => Contents::Unreadable(error),
        };
        (contents, stamp)
    }
}

/// A file's contents, if it is text.
pub(crate) enum Contents {
    Text(String),
    /// Not UTF-8: skipped like any binary file.
    Binary,
    /// Could not be read at all.
    Unreadable(io::Error),
}

/// One file's size and modification time (nanoseconds since the epoch, 0 when unknown): the
/// snapshot a target ref into the file is bound to. Any write moves it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FileStamp {
    pub(crate) len: u64,
    pub(crate) modified: u128,
}

impl FileStamp {
    pub(crate) fn of(metadata: &cap_std::fs::Metadata) -> FileStamp {
        let modified = metadata
            .modified()
            .ok()
            .map(cap_std::time::SystemTime::into_std)
            .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |since| since.as_nanos());
        FileStamp {
            len: metadata.len(),
            modified,
        }
    }
}

impl Snapshot for FileStamp {
    fn digest(&self) -> String {
        format!("{}:{}", self.len, self.modified)
    }
}
