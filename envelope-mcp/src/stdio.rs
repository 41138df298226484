//! Standard input as a server's line transport, read on the runtime's own thread where the
//! platform allows.
//!
//! tokio's `stdin()` hands every read to its blocking pool, since a terminal or a file cannot
//! be polled: each line in crosses to another thread and back. An MCP host starts a server
//! with pipes (or a socket pair, as Node does), and those can be polled like any socket. So on
//! Unix a pipe or a socket is read directly, ready when epoll says so, and only a terminal or
//! a file falls back to tokio's own stream. The descriptor is set back to blocking when the
//! server lets go of it: it may outlive the server (a program reading after it served, a
//! parent sharing the stream).
//!
//! Output stays on tokio's `stdout()`, a line a write from the blocking pool. Written directly,
//! a call's last progress report and its result left within microseconds of each other and
//! reached the client in one read; the official TypeScript SDK handles a notification a
//! microtask after the response read with it, and by then the response has closed the
//! request, so it dropped that report. Each line written from the pool reaches the client
//! apart from the next.

use tokio::io::AsyncRead;

/// The server's input: standard input, polled when it is a pipe or a socket.
pub(crate) fn input() -> Box<dyn AsyncRead + Send + Unpin> {
    #[cfg(unix)]
    if let Some(polled) = polled::input() {
        return polled;
    }
    Box::new(tokio::io::stdin())
}

#[cfg(unix)]
mod polled {
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, ReadBuf};
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
}
