//! What the proxy's HTTP tests share.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use envelope_mcp::{EnvelopeConfig, HttpConfig};
use envelope_proxy::{Proxy, ProxyConfig};

/// The proxy in front of the fixture (`fixtures/upstream.py`), serving as `serving` says.
pub(crate) async fn fronting_the_fixture(serving: EnvelopeConfig) -> Proxy {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upstream.py");
    let text = format!(
        "[upstream]\ncommand = [\"python3\", {:?}]\ncall_timeout_seconds = 5\n",
        fixture.display().to_string()
    );
    let config = ProxyConfig::parse(&text).expect("the configuration parses");
    Proxy::start(config, serving)
        .await
        .expect("the proxy starts")
}

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

/// Sends `request`, a whole HTTP/1.1 request that asks to close the connection, to `addr`: the
/// answer's head and body.
pub(crate) async fn exchange(addr: SocketAddr, request: &str) -> (String, String) {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("connects");
    stream.write_all(request.as_bytes()).await.expect("written");
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(20), stream.read_to_end(&mut answer))
        .await
        .expect("answered in time")
        .expect("read");
    let answer = String::from_utf8(answer).expect("UTF-8");
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
    (head.to_owned(), body.to_owned())
}
