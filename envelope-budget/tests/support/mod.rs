//! Helpers shared by this crate's tests and benches.

/// Runs a future that never waits to completion: a `#[tool]` body that does no I/O is ready at
/// its first poll, so no runtime is needed.
pub(crate) fn block_on<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}
