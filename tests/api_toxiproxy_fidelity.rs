//! The control plane answers as Toxiproxy 2.12 does (api.go,
//! proxy_collection.go) where firedrill used to differ: percent-encoded
//! proxy names, address errors, slow bodies, `/populate` error bodies.
//! In process, on loopback.

use std::net::SocketAddr;
use std::sync::Arc;

use firedrill::api::guard::{BODY_LIMIT, Guard};
use firedrill::api::{Api, serve};
use firedrill::http::ShutdownSignal;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// An API server on a free loopback port; stopped when dropped.
struct ApiServer {
    addr: SocketAddr,
    _stop: tokio::sync::watch::Sender<bool>,
}

async fn api_server() -> ApiServer {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, shutdown) = ShutdownSignal::new();
    let api = Arc::new(Api::new(Guard::new(None, BODY_LIMIT), 1));
    tokio::spawn(serve(listener, api, None, shutdown));
    ApiServer { addr, _stop: stop }
}

impl ApiServer {
    /// One request; the status and the body as JSON (`Null` when empty).
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut req = client.request(method, format!("http://{}{path}", self.addr));
        if let Some(body) = body {
            req = req.body(body.to_string());
        }
        let resp = req.send().await.expect("the API answers");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }
}

/// A loopback port nothing listens on any more.
async fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .local_addr()
        .unwrap()
}

#[tokio::test]
async fn a_percent_encoded_proxy_name_is_decoded_so_the_proxy_can_be_shown_edited_and_deleted() {
    let api = api_server().await;
    let upstream = free_port().await;
    let (status, _) = api
        .call(
            "POST",
            "/proxies",
            Some(json!({"name": "with space", "upstream": upstream.to_string()})),
        )
        .await;
    assert_eq!(status, 201);
    let (status, shown) = api.call("GET", "/proxies/with%20space", None).await;
    assert_eq!((status, &shown["name"]), (200, &json!("with space")));
    let (status, _) = api
        .call(
            "POST",
            "/proxies/with%20space/toxics",
            Some(json!({"type": "latency", "name": "slow%"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, toxic) = api
        .call("GET", "/proxies/with%20space/toxics/slow%25", None)
        .await;
    assert_eq!((status, &toxic["name"]), (200, &json!("slow%")));
    let (status, _) = api.call("DELETE", "/proxies/with%20space", None).await;
    assert_eq!(status, 204);
    let (status, _) = api.call("GET", "/proxies/with%20space", None).await;
    assert_eq!(status, 404);
    let (status, body) = api.call("GET", "/proxies/bad%zz", None).await;
    assert_eq!((status, &body["status"]), (400, &json!(400)));
}

#[tokio::test]
async fn an_address_that_is_not_one_is_400_and_a_valid_one_that_cannot_be_bound_is_500() {
    let api = api_server().await;
    let upstream = free_port().await;
    for (listen, upstream, field) in [
        ("no-port", upstream.to_string(), "listen"),
        ("127.0.0.1:99999", upstream.to_string(), "listen"),
        ("127.0.0.1:0", "no-port".to_string(), "upstream"),
        ("127.0.0.1:0", "127.0.0.1:99999".to_string(), "upstream"),
    ] {
        let (status, body) = api
            .call(
                "POST",
                "/proxies",
                Some(json!({"name": "p", "listen": listen, "upstream": upstream})),
            )
            .await;
        assert_eq!((status, &body["status"]), (400, &json!(400)), "{body}");
        let message = body["error"].as_str().unwrap();
        assert!(message.starts_with(field), "{message}");
    }
    // Taken: the API's own port.
    let (status, body) = api
        .call(
            "POST",
            "/proxies",
            Some(json!({"name": "p", "listen": api.addr.to_string(), "upstream": upstream.to_string()})),
        )
        .await;
    assert_eq!(status, 500, "{body}");
    let (status, _) = api.call("GET", "/proxies/p", None).await;
    assert_eq!(status, 404, "a failed create leaves nothing");
}

#[tokio::test]
async fn populate_errors_carry_the_proxies_made_before_the_error() {
    let api = api_server().await;
    let upstream = free_port().await.to_string();
    let (status, body) = api
        .call(
            "POST",
            "/populate",
            Some(json!([{"name": "a", "upstream": upstream}, {"name": "b"}])),
        )
        .await;
    assert_eq!(
        (status, body),
        (
            400,
            json!({"error": "missing required field: upstream at proxy 2", "status": 400, "proxies": []})
        )
    );
    let (status, body) = api.call("POST", "/populate", Some(json!({"x": 1}))).await;
    assert_eq!((status, &body["proxies"]), (400, &json!([])), "{body}");
    // The second cannot bind (the API's own port): the first stays.
    let (status, body) = api
        .call(
            "POST",
            "/populate",
            Some(json!([
                {"name": "a", "upstream": upstream},
                {"name": "b", "listen": api.addr.to_string(), "upstream": upstream},
            ])),
        )
        .await;
    assert_eq!((status, &body["status"]), (500, &json!(500)), "{body}");
    let names: Vec<&Value> = body["proxies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["name"])
        .collect();
    assert_eq!(names, [&json!("a")]);
    let (status, body) = api
        .call(
            "POST",
            "/populate",
            Some(json!([{"name": "c", "upstream": upstream}])),
        )
        .await;
    assert_eq!(status, 201);
    assert_eq!(
        body.as_object().unwrap().len(),
        1,
        "no error fields: {body}"
    );
}

/// Reads until the end of an HTTP response head.
async fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        if stream.read(&mut byte).await.unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8_lossy(&head).into_owned()
}

#[tokio::test(start_paused = true)]
async fn a_body_shorter_than_its_content_length_gets_408_after_30_seconds_not_a_hang() {
    let api = api_server().await;
    let mut stream = TcpStream::connect(api.addr).await.unwrap();
    // `Expect: 100-continue`: the interim answer says the server reads the
    // body (the head was taken), so the clock that runs next is the body's.
    stream
        .write_all(
            b"POST /proxies HTTP/1.1\r\nhost: x\r\ncontent-length: 40\r\nexpect: 100-continue\r\n\r\n",
        )
        .await
        .unwrap();
    assert!(read_head(&mut stream).await.starts_with("HTTP/1.1 100"));
    stream.write_all(b"{\"name\":").await.unwrap();
    let sent = tokio::time::Instant::now();
    // Before the fix nothing ever answered: fail instead of hanging.
    let head = tokio::time::timeout(std::time::Duration::from_secs(120), read_head(&mut stream))
        .await
        .expect("an answer, not a connection held forever");
    assert!(head.starts_with("HTTP/1.1 408"), "{head:?}");
    assert!(
        sent.elapsed() >= std::time::Duration::from_secs(30),
        "{:?}",
        sent.elapsed()
    );
}
