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
//! A stream shared with standard error (`2>&1`; one socket for all three) stays on tokio's
//! stream: made nonblocking, the shared pipe or socket would fail a log line written while it
//! is full.
//!
//! Standard input and output may be one socket (systemd's `StandardInput=socket`, inetd,
//! socat's `EXEC`): the two share its flags, so it is set back to blocking only when both are
//! let go of, never under the one still in use.
//!
//! Written directly, a notification and the answer after it can leave within microseconds and
//! reach the client in one read; the writer keeps them apart (see
//! [`NOTICE_GAP`](crate::lines::NOTICE_GAP)).

use tokio::io::{AsyncRead, AsyncWrite};

/// What the server reads its lines from.
type Input = Box<dyn AsyncRead + Send + Unpin>;
/// What the server writes its lines to.
type Output = Box<dyn AsyncWrite + Send + Unpin>;

/// The server's input and output: standard input and output, each polled when it is a pipe
/// or a socket.
pub(crate) fn standard() -> (Input, Output) {
    #[cfg(unix)]
    {
        let (input, output) =
            polled::streams(&std::io::stdin(), &std::io::stdout(), &std::io::stderr());
        (
            input.unwrap_or_else(|| Box::new(tokio::io::stdin())),
            output.unwrap_or_else(|| Box::new(tokio::io::stdout())),
        )
    }
    #[cfg(not(unix))]
    (Box::new(tokio::io::stdin()), Box::new(tokio::io::stdout()))
}

#[cfg(unix)]
mod polled {
    use std::fs::File;
    use std::io;
    use std::os::fd::{AsFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt as _;
    use std::pin::Pin;
    use std::sync::Arc;
    use std::task::{Context, Poll};

    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
    use tokio::net::UnixStream;
    use tokio::net::unix::pipe;

    use super::{Input, Output};

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

    /// The polled reader of `input` and writer of `output`, each `None` where it cannot be
    /// polled or is the file `error` is. One socket for both is set back to blocking when the
    /// second of the two is dropped.
    pub(super) fn streams(
        input: &impl AsFd,
        output: &impl AsFd,
        error: &impl AsFd,
    ) -> (Option<Input>, Option<Output>) {
        // Standard error on the same pipe or socket (`2>&1`) would turn nonblocking with it,
        // and a log line written while it is full would fail: a stream shared with standard
        // error is left to tokio's own, input (one socket for all three) as well as output.
        let unshared = |(file, _): &(File, Kind)| !same_file(file, error);
        let input = pollable(input).filter(unshared);
        let output = pollable(output).filter(unshared);
        // One socket is one open file, whose flags both streams share. Two pipe ends share an
        // inode but not their flags: each is set back on its own.
        let shared = match (&input, &output) {
            (Some((read, Kind::Socket)), Some((written, Kind::Socket)))
                if same_file(read, written) =>
            {
                Some(Arc::new(()))
            }
            _ => None,
        };
        let reader = input.and_then(|(file, kind)| -> Option<Input> {
            let shared = shared.clone();
            Some(match kind {
                Kind::Pipe => Box::new(Polled::new(pipe::Receiver::from_file(file).ok()?, shared)),
                Kind::Socket => Box::new(Polled::new(socket(file)?, shared)),
            })
        });
        let writer = output.and_then(|(file, kind)| -> Option<Output> {
            Some(match kind {
                Kind::Pipe => Box::new(Polled::new(pipe::Sender::from_file(file).ok()?, shared)),
                Kind::Socket => Box::new(Polled::new(socket(file)?, shared)),
            })
        });
        (reader, writer)
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

    /// A polled standard stream, `Some` until dropped, when it is set back to blocking: by the
    /// last of the streams that share the file (`shared`, one count each), or by itself alone.
    struct Polled<T: Blocking> {
        stream: Option<T>,
        shared: Option<Arc<()>>,
    }

    impl<T: Blocking> Polled<T> {
        fn new(stream: T, shared: Option<Arc<()>>) -> Self {
            Polled {
                stream: Some(stream),
                shared,
            }
        }

        fn stream(&mut self) -> Pin<&mut T>
        where
            T: Unpin,
        {
            Pin::new(
                self.stream
                    .as_mut()
                    .expect("a polled stream is present until dropped"),
            )
        }
    }

    impl<T: Blocking> Drop for Polled<T> {
        fn drop(&mut self) {
            // `Arc::into_inner` is `Some` for exactly one of the sharers, however they race.
            let last = self
                .shared
                .take()
                .is_none_or(|shared| Arc::into_inner(shared).is_some());
            let stream = self.stream.take();
            if last && let Some(stream) = stream {
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

    #[cfg(test)]
    mod tests {
        use std::os::unix::net::UnixStream as Socket;

        use rustix::fs::OFlags;

        use super::*;

        fn nonblocking(stream: &impl AsFd) -> bool {
            rustix::fs::fcntl_getfl(stream)
                .expect("the flags read")
                .contains(OFlags::NONBLOCK)
        }

        #[tokio::test]
        async fn one_socket_for_both_turns_blocking_only_when_both_are_let_go_of() {
            let (socket, _client) = Socket::pair().expect("a socket pair");
            let (_elsewhere, error) = Socket::pair().expect("a socket pair");
            let (input, output) = streams(&socket, &socket, &error);
            let (input, output) = (input.expect("polled"), output.expect("polled"));
            assert!(nonblocking(&socket));
            drop(input);
            assert!(
                nonblocking(&socket),
                "the output still writes to it, polled: it stays nonblocking"
            );
            drop(output);
            assert!(!nonblocking(&socket), "both let go of: blocking again");
        }

        #[tokio::test]
        async fn streams_of_their_own_turn_blocking_each_when_let_go_of() {
            let (read, _client_writes) = Socket::pair().expect("a socket pair");
            let (written, _client_reads) = Socket::pair().expect("a socket pair");
            let (_elsewhere, error) = Socket::pair().expect("a socket pair");
            let (input, output) = streams(&read, &written, &error);
            let (input, output) = (input.expect("polled"), output.expect("polled"));
            drop(input);
            assert!(!nonblocking(&read));
            assert!(nonblocking(&written));
            drop(output);
            assert!(!nonblocking(&written));
        }

        #[tokio::test]
        async fn the_two_ends_of_one_pipe_turn_blocking_each_when_let_go_of() {
            // One inode, two open files: each end's flags are its own.
            let (read, written) = std::io::pipe().expect("a pipe");
            let (_elsewhere, error) = Socket::pair().expect("a socket pair");
            let (input, output) = streams(&read, &written, &error);
            let (input, output) = (input.expect("polled"), output.expect("polled"));
            drop(input);
            assert!(!nonblocking(&read));
            drop(output);
            assert!(!nonblocking(&written));
        }

        #[tokio::test]
        async fn one_socket_for_all_three_is_left_blocking() {
            let (socket, _client) = Socket::pair().expect("a socket pair");
            let (input, output) = streams(&socket, &socket, &socket);
            assert!(input.is_none() && output.is_none());
            assert!(
                !nonblocking(&socket),
                "a log line written to it must not fail"
            );
        }

        #[tokio::test]
        async fn an_output_shared_with_standard_error_is_not_polled() {
            let (read, _client_writes) = Socket::pair().expect("a socket pair");
            let (written, _client_reads) = Socket::pair().expect("a socket pair");
            let (input, output) = streams(&read, &written, &written);
            assert!(input.is_some() && output.is_none());
            assert!(!nonblocking(&written));
        }
    }
}
