//! What the proxy's HTTP tests share.

use std::net::SocketAddr;
use std::time::Duration;

use envelope_mcp::HttpConfig;
use envelope_proxy::Proxy;

/// Serves `proxy` over HTTP as `http` says, on a free loopback port, once it accepts
/// connections: its address.
pub(crate) async fn serve_on_loopback(proxy: &Proxy, http: HttpConfig) -> SocketAddr {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    tokio::spawn(proxy.server().clone().serve_http_with(addr, http));
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    addr
}
