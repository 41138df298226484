//! Standard input and output as a server's line transport, read and written on the runtime's
//! own thread where the platform allows.
//!
//! tokio's `stdin()` and `stdout()` hand every read and every write to its blocking pool,
//! since a terminal or a file cannot be polled: each line in and each line out crosses to
//! another thread and back. An MCP host starts a server with pipes (or a socket pair, as
//! Node does), and those can be polled like any socket. So on Unix a pipe or a socket is
//! read and written directly, ready when epoll says so, and only a terminal or a file falls
//! back to tokio's own streams. The descriptor is set back to blocking when the server lets
//! go of it: it may outlive the server (a program printing after it served, a parent sharing
//! the stream).
//!
//! Standard output shared with standard error (`2>&1`) stays on tokio's stream: made
//! nonblocking, the shared pipe would fail a log line written while it is full.
//!
//! Written directly, a notification and the answer after it can leave within microseconds and
//! reach the client in one read; the writer keeps them apart (see
//! [`NOTICE_GAP`](crate::lines::NOTICE_GAP)).

use tokio::io::{AsyncRead, AsyncWrite};

/// The server's input: standard input, polled when it is a pipe or a socket.
pub(crate) fn input() -> Box<dyn AsyncRead + Send + Unpin> {
    #[cfg(unix)]
    if let Some(polled) = polled::input() {
        return polled;
    }
    Box::new(tokio::io::stdin())
}

/// The server's output: standard output, polled when it is a pipe or a socket.
pub(crate) fn output() -> Box<dyn AsyncWrite + Send + Unpin> {
    #[cfg(unix)]
    if let Some(polled) = polled::output() {
        return polled;
    }
    Box::new(tokio::io::stdout())
}

#[cfg(unix)]
mod polled {
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio::net::UnixStream;
    use tokio::net::unix::pipe;

    /// What a standard stream is, as far as polling it goes.
    enum Kind {
        Pipe,
        Socket,
    }

    /// A copy of the descriptor (sharing its open file, so its flags), and what it is; `None`
    /// for what cannot be polled (a terminal, a file, `/dev/null`) or cannot be inspected.
    fn pollable(stream: impl AsFd) -> Option<(File, Kind)> {
        let file = File::from(stream.as_fd().try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        if kind.is_fifo() {
            Some((file, Kind::Pipe))
        } else if kind.is_socket() {
            Some((file, Kind::Socket))
        } else {
            None
        }
    }

    pub(super) fn input() -> Option<Box<dyn AsyncRead + Send + Unpin>> {
        let (file, kind) = pollable(io::stdin())?;
        Some(match kind {
            Kind::Pipe => Box::new(Polled(Some(pipe::Receiver::from_file(file).ok()?))),
            Kind::Socket => Box::new(Polled(Some(socket(file)?))),
        })
    }

    pub(super) fn output() -> Option<Box<dyn AsyncWrite + Send + Unpin>> {
        let (file, kind) = pollable(io::stdout())?;
        // Standard error on the same pipe (`2>&1`) would turn nonblocking with it, and a log
        // line written to a full pipe would fail: such an output is left to tokio's stream.
        if same_file(&file, &io::stderr()) {
            return None;
        }
        Some(match kind {
            Kind::Pipe => Box::new(Polled(Some(pipe::Sender::from_file(file).ok()?))),
            Kind::Socket => Box::new(Polled(Some(socket(file)?))),
        })
    }

    /// Whether `stream` is the file `file` is (the same device and inode).
    fn same_file(file: &File, stream: &impl AsFd) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        let Ok(other) = stream.as_fd().try_clone_to_owned().map(File::from) else {
            return false;
        };
        match (file.metadata(), other.metadata()) {
            (Ok(one), Ok(other)) => one.dev() == other.dev() && one.ino() == other.ino(),
            _ => false,
        }
    }

    /// A stream socket, nonblocking and registered with the runtime. tokio's `UnixStream`
    /// only reads and writes the descriptor, which serves any stream socket alike.
    fn socket(file: File) -> Option<UnixStream> {
        let socket = std::os::unix::net::UnixStream::from(OwnedFd::from(file));
        socket.set_nonblocking(true).ok()?;
        UnixStream::from_std(socket).ok()
    }

    /// A stream set back to blocking mode.
    trait Blocking {
        fn set_blocking(self);
    }

    impl Blocking for pipe::Receiver {
        fn set_blocking(self) {
            let _ = self.into_blocking_fd();
        }
    }

    impl Blocking for pipe::Sender {
        fn set_blocking(self) {
            let _ = self.into_blocking_fd();
        }
    }

    impl Blocking for UnixStream {
        fn set_blocking(self) {
            if let Ok(socket) = self.into_std() {
                let _ = socket.set_nonblocking(false);
            }
        }
    }

    /// A polled standard stream, `Some` until dropped, when it is set back to blocking.
    struct Polled<T: Blocking>(Option<T>);

    impl<T: Blocking> Polled<T> {
        fn stream(&mut self) -> Pin<&mut T>
        where
            T: Unpin,
        {
            Pin::new(
                self.0
                    .as_mut()
                    .expect("a polled stream is present until dropped"),
            )
        }
    }

    impl<T: Blocking> Drop for Polled<T> {
        fn drop(&mut self) {
            if let Some(stream) = self.0.take() {
                stream.set_blocking();
            }
        }
    }

    impl<T: Blocking + AsyncRead + Unpin> AsyncRead for Polled<T> {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            self.stream().poll_read(cx, buf)
        }
    }

    impl<T: Blocking + AsyncWrite + Unpin> AsyncWrite for Polled<T> {
        fn poll_write(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            self.stream().poll_write(cx, buf)
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.stream().poll_flush(cx)
        }

        fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.stream().poll_shutdown(cx)
        }
    }
}
