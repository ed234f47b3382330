//! Every endpoint of the Toxiproxy-compatible API, with its status codes
//! and error bodies, against `firedrill server` as a real process, with
//! traffic through the proxies it creates on loopback.

mod api_support;

use std::time::Duration;

use api_support::{Server, echo, error_body, server};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Sends bytes and reads the echo; returns how long it took.
async fn round_trip(stream: &mut TcpStream, payload: &[u8]) -> Duration {
    let t = Instant::now();
    stream.write_all(payload).await.unwrap();
    let mut got = vec![0u8; payload.len()];
    stream.read_exact(&mut got).await.unwrap();
    assert_eq!(got, payload);
    t.elapsed()
}

async fn connected(addr: std::net::SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s
}

#[tokio::test]
async fn version_is_a_json_semver_at_least_2_6_0_so_clients_use_patch() {
    let s = server(&[]).await;
    let a = s.call("GET", "/version", None).await;
    assert_eq!(a.status, 200);
    assert!(
        a.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/json")
    );
    let v = a.json["version"].as_str().unwrap();
    let parts: Vec<u64> = v.split('.').map(|p| p.parse().unwrap()).collect();
    assert_eq!(parts.len(), 3, "{v}");
    assert!((parts[0], parts[1]) >= (2, 6), "{v}");
}

#[tokio::test]
async fn create_returns_201_with_the_bound_port_and_the_proxy_forwards() {
    let s = server(&[]).await;
    let up = echo().await;
    let a = s
        .call(
            "POST",
            "/proxies",
            Some(&format!(
                r#"{{"name":"db","listen":"127.0.0.1:0","upstream":"{up}"}}"#
            )),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.text);
    let listen = a.json["listen"].as_str().unwrap();
    assert!(!listen.ends_with(":0"), "listen not rewritten: {listen}");
    assert_eq!(
        a.json,
        json!({"name":"db","listen":listen,"upstream":up.to_string(),"enabled":true,"toxics":[]})
    );
    let mut c = connected(listen.parse().unwrap()).await;
    round_trip(&mut c, b"hello").await;
}

#[tokio::test]
async fn create_errors_are_400_missing_field_409_exists_400_bad_body_and_500_bind() {
    let s = server(&[]).await;
    let up = echo().await;
    let a = s
        .call(
            "POST",
            "/proxies",
            Some(&format!(r#"{{"upstream":"{up}"}}"#)),
        )
        .await;
    assert_eq!(
        (a.status, a.json.clone()),
        (400, error_body("missing required field: name", 400))
    );
    let a = s.call("POST", "/proxies", Some(r#"{"name":"x"}"#)).await;
    assert_eq!(
        (a.status, a.json.clone()),
        (400, error_body("missing required field: upstream", 400))
    );
    s.proxy("x", up).await;
    let a = s
        .call(
            "POST",
            "/proxies",
            Some(&format!(r#"{{"name":"x","upstream":"{up}"}}"#)),
        )
        .await;
    assert_eq!(
        (a.status, a.json.clone()),
        (409, error_body("proxy already exists", 409))
    );
    let a = s
        .call("POST", "/proxies", Some(r#"{"name": "y", "upstream": "#))
        .await;
    assert_eq!(a.status, 400);
    assert!(
        a.json["error"]
            .as_str()
            .unwrap()
            .starts_with("bad request body: EOF while parsing"),
        "{}",
        a.text
    );
    assert_eq!(a.json["status"], 400);
    // The echo's own port is taken: binding it fails.
    let a = s
        .call(
            "POST",
            "/proxies",
            Some(&format!(
                r#"{{"name":"z","listen":"{up}","upstream":"{up}"}}"#
            )),
        )
        .await;
    assert_eq!(a.status, 500, "{}", a.text);
    assert!(
        a.json["error"].as_str().unwrap().contains("cannot bind"),
        "{}",
        a.text
    );
    assert_eq!(
        s.call("GET", "/proxies/z", None).await.status,
        404,
        "a failed create leaves nothing"
    );
}

#[tokio::test]
async fn list_and_show_return_proxies_by_name_and_unknown_is_404() {
    let s = server(&[]).await;
    let up = echo().await;
    s.proxy("b", up).await;
    s.proxy("a", up).await;
    let a = s.call("GET", "/proxies", None).await;
    assert_eq!(a.status, 200);
    let names: Vec<&String> = a.json.as_object().unwrap().keys().collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(a.json["a"]["name"], "a");
    let one = s.call("GET", "/proxies/b", None).await;
    assert_eq!((one.status, one.json.clone()), (200, a.json["b"].clone()));
    let none = s.call("GET", "/proxies/nope", None).await;
    assert_eq!(
        (none.status, none.json),
        (404, error_body("proxy not found", 404))
    );
    for m in ["PATCH", "DELETE"] {
        let body = (m == "PATCH").then_some("{}");
        assert_eq!(s.call(m, "/proxies/nope", body).await.status, 404, "{m}");
    }
}

#[tokio::test]
async fn disabling_closes_the_listener_and_open_connections_and_enabling_reopens_it() {
    let s = server(&[]).await;
    let up = echo().await;
    let listen = s.proxy("svc", up).await;
    let mut open = connected(listen).await;
    round_trip(&mut open, b"x").await;
    let a = s
        .call("PATCH", "/proxies/svc", Some(r#"{"enabled":false}"#))
        .await;
    assert_eq!((a.status, a.json["enabled"].clone()), (200, json!(false)));
    let mut buf = [0u8; 1];
    let read = tokio::time::timeout(Duration::from_secs(5), open.read(&mut buf))
        .await
        .expect("closed at once");
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "open connection still alive: {read:?}"
    );
    assert!(
        TcpStream::connect(listen).await.is_err(),
        "listener still open"
    );
    // POST is the older clients' way to update; it works the same.
    let a = s
        .call("POST", "/proxies/svc", Some(r#"{"enabled":true}"#))
        .await;
    assert_eq!((a.status, a.json["enabled"].clone()), (200, json!(true)));
    assert_eq!(
        a.json["listen"],
        listen.to_string(),
        "re-enabled on the same port"
    );
    let mut again = connected(listen).await;
    round_trip(&mut again, b"y").await;
}

#[tokio::test]
async fn patch_upstream_moves_the_proxy_and_delete_is_204_then_404() {
    let s = server(&[]).await;
    let (one, two) = (echo().await, echo().await);
    s.proxy("p", one).await;
    let a = s
        .call(
            "PATCH",
            "/proxies/p",
            Some(&format!(r#"{{"upstream":"{two}"}}"#)),
        )
        .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json["upstream"], two.to_string());
    assert_eq!(a.json["enabled"], true);
    let listen = a.json["listen"].as_str().unwrap().parse().unwrap();
    round_trip(&mut connected(listen).await, b"moved").await;
    let d = s.call("DELETE", "/proxies/p", None).await;
    assert_eq!((d.status, d.text.as_str()), (204, ""));
    assert!(
        TcpStream::connect(listen).await.is_err(),
        "deleted proxy still listens"
    );
    let d = s.call("DELETE", "/proxies/p", None).await;
    assert_eq!(
        (d.status, d.json),
        (404, error_body("proxy not found", 404))
    );
}

#[tokio::test]
async fn toxic_crud_has_toxiproxy_defaults_codes_and_error_bodies() {
    let s = server(&[]).await;
    s.proxy("p", echo().await).await;
    let a = s
        .call(
            "POST",
            "/proxies/p/toxics",
            Some(r#"{"type":"latency","attributes":{"latency":10}}"#),
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
    assert_eq!(
        a.json,
        json!({"name":"latency_downstream","type":"latency","stream":"downstream","toxicity":1.0,"attributes":{"latency":10,"jitter":0}})
    );
    creations_toxiproxy_refuses_are_refused_alike(&s).await;
    s.call(
        "POST",
        "/proxies/p/toxics",
        Some(r#"{"name":"cut","type":"reset_peer","stream":"upstream","toxicity":0.5}"#),
    )
    .await;
    let list = s.call("GET", "/proxies/p/toxics", None).await;
    assert_eq!(list.status, 200);
    let names: Vec<&str> = list
        .json
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["latency_downstream", "cut"]);
    let one = s.call("GET", "/proxies/p/toxics/cut", None).await;
    assert_eq!(
        (
            one.status,
            one.json["toxicity"].clone(),
            one.json["stream"].clone()
        ),
        (200, json!(0.5), json!("upstream"))
    );
    let upd = s
        .call(
            "PATCH",
            "/proxies/p/toxics/latency_downstream",
            Some(r#"{"attributes":{"jitter":3},"toxicity":0.25,"type":"ignored"}"#),
        )
        .await;
    assert_eq!(upd.status, 200, "{}", upd.text);
    assert_eq!(upd.json["attributes"], json!({"latency":10,"jitter":3}));
    assert_eq!(
        (upd.json["toxicity"].clone(), upd.json["type"].clone()),
        (json!(0.25), json!("latency"))
    );
    let missing = s.call("GET", "/proxies/p/toxics/nope", None).await;
    assert_eq!(
        (missing.status, missing.json),
        (404, error_body("toxic not found", 404))
    );
    let missing = s.call("PATCH", "/proxies/p/toxics/nope", Some("{}")).await;
    assert_eq!(
        (missing.status, missing.json),
        (404, error_body("toxic not found", 404))
    );
    let d = s.call("DELETE", "/proxies/p/toxics/cut", None).await;
    assert_eq!((d.status, d.text.as_str()), (204, ""));
    let d = s.call("DELETE", "/proxies/p/toxics/cut", None).await;
    assert_eq!(
        (d.status, d.json),
        (404, error_body("toxic not found", 404))
    );
    let shown = s.call("GET", "/proxies/p", None).await;
    assert_eq!(shown.json["toxics"].as_array().unwrap().len(), 1);
}

/// The creations Toxiproxy refuses, with its codes and error bodies: a
/// name taken, an unknown type, an unknown stream, a proxy that is not
/// there (`p` has a toxic `latency_downstream`; there is no `q`).
async fn creations_toxiproxy_refuses_are_refused_alike(s: &Server) {
    for (path, body, status, message) in [
        (
            "/proxies/p/toxics",
            r#"{"type":"latency"}"#,
            409,
            "toxic already exists",
        ),
        (
            "/proxies/p/toxics",
            r#"{"type":"lightning"}"#,
            400,
            "invalid toxic type",
        ),
        (
            "/proxies/p/toxics",
            r#"{"type":"latency","stream":"sideways"}"#,
            400,
            "stream was invalid, can be either upstream or downstream",
        ),
        (
            "/proxies/q/toxics",
            r#"{"type":"latency"}"#,
            404,
            "proxy not found",
        ),
    ] {
        let refused = s.call("POST", path, Some(body)).await;
        assert_eq!(
            (refused.status, refused.json),
            (status, error_body(message, status)),
            "{body}"
        );
    }
}

#[tokio::test]
async fn where_toxiproxy_misbehaves_bad_toxicity_zero_slicer_and_unknown_attributes_are_400() {
    let s = server(&[]).await;
    s.proxy("p", echo().await).await;
    for (body, message) in [
        (
            r#"{"type":"latency","toxicity":1.5}"#,
            "toxicity: must be from 0 to 1, got 1.5",
        ),
        (
            r#"{"type":"latency","toxicity":-0.1}"#,
            "toxicity: must be from 0 to 1, got -0.1",
        ),
        (
            r#"{"type":"bandwidth","attributes":{"rate":0}}"#,
            "attributes.rate: must be at least 1 KB/s",
        ),
        (
            r#"{"type":"latency","attributes":{"delay":100}}"#,
            "attributes.delay: unknown attribute of latency (it has: latency, jitter)",
        ),
        (
            r#"{"type":"latency","attributes":{"latency":-5}}"#,
            "attributes.latency: must be a whole number from 0 to 9223372036854775807, got -5",
        ),
    ] {
        let a = s.call("POST", "/proxies/p/toxics", Some(body)).await;
        assert_eq!(
            (a.status, a.json),
            (400, error_body(message, 400)),
            "{body}"
        );
    }
    let a = s
        .call(
            "POST",
            "/proxies/p/toxics",
            Some(r#"{"type":"slicer","attributes":{"average_size":0}}"#),
        )
        .await;
    assert_eq!(a.status, 400);
    assert!(
        a.json["error"]
            .as_str()
            .unwrap()
            .starts_with("attributes.average_size: must be at least 1 byte"),
        "{}",
        a.text
    );
    let a = s.call("PATCH", "/proxies/p/toxics/x", Some("{}")).await;
    assert_eq!(a.status, 404);
    assert!(
        s.call("GET", "/proxies/p/toxics", None)
            .await
            .json
            .as_array()
            .unwrap()
            .is_empty(),
        "a refused toxic is not added"
    );
}

#[tokio::test]
async fn a_latency_toxic_delays_an_already_open_connection_and_removing_it_restores_speed() {
    // The toxic's own latency is the bound on either side: a round trip
    // it holds takes at least that long, one it no longer holds less (a
    // loaded machine's scheduling delays stay far below 2 s).
    const LATENCY: Duration = Duration::from_millis(2000);
    let s = server(&[]).await;
    let listen = s.proxy("p", echo().await).await;
    let mut c = connected(listen).await;
    let before = round_trip(&mut c, b"a").await;
    assert!(before < LATENCY, "{before:?}");
    let a = s
        .call(
            "POST",
            "/proxies/p/toxics",
            Some(r#"{"type":"latency","attributes":{"latency":2000}}"#),
        )
        .await;
    assert_eq!(a.status, 200);
    let slow = round_trip(&mut c, b"b").await;
    assert!(slow >= LATENCY && slow < LATENCY * 5, "{slow:?}");
    s.call("DELETE", "/proxies/p/toxics/latency_downstream", None)
        .await;
    let fast = round_trip(&mut c, b"c").await;
    assert!(fast < LATENCY, "the removed toxic still holds: {fast:?}");
}

#[tokio::test]
async fn populate_checks_every_entry_first_and_replaces_only_changed_proxies() {
    let s = server(&[]).await;
    let (one, two) = (echo().await, echo().await);
    let body = format!(
        r#"[{{"name":"a","listen":"127.0.0.1:0","upstream":"{one}"}},{{"name":"b","upstream":"{one}"}}]"#
    );
    let a = s.call("POST", "/populate", Some(&body)).await;
    assert_eq!(a.status, 201, "{}", a.text);
    let proxies = a.json["proxies"].as_array().unwrap();
    assert_eq!(proxies.len(), 2);
    let a_listen = proxies[0]["listen"].as_str().unwrap().to_string();
    let b_listen = proxies[1]["listen"].as_str().unwrap().to_string();
    // Same listen and upstream: kept (same port); new upstream: replaced.
    let body = format!(
        r#"[{{"name":"a","listen":"{a_listen}","upstream":"{one}"}},{{"name":"b","listen":"{b_listen}","upstream":"{two}"}}]"#
    );
    let again = s.call("POST", "/populate", Some(&body)).await;
    assert_eq!(again.status, 201);
    assert_eq!(again.json["proxies"][0]["listen"], a_listen.as_str());
    assert_eq!(again.json["proxies"][1]["upstream"], two.to_string());
    // One bad entry: 400 and nothing is created; Toxiproxy's body names
    // the entry and lists the proxies made (none).
    let body = format!(r#"[{{"name":"c","upstream":"{one}"}},{{"name":"d"}}]"#);
    let bad = s.call("POST", "/populate", Some(&body)).await;
    let mut expected = error_body("missing required field: upstream at proxy 2", 400);
    expected["proxies"] = serde_json::json!([]);
    assert_eq!((bad.status, bad.json), (400, expected));
    assert_eq!(s.call("GET", "/proxies/c", None).await.status, 404);
    let bad = s.call("POST", "/populate", Some(r#"{"name":"x"}"#)).await;
    assert_eq!(bad.status, 400);
    assert!(
        bad.json["error"]
            .as_str()
            .unwrap()
            .starts_with("bad request body: invalid type: map"),
        "{}",
        bad.text
    );
}

#[tokio::test]
async fn reset_is_204_and_enables_every_proxy_and_removes_every_toxic() {
    let s = server(&[]).await;
    let up = echo().await;
    let listen = s.proxy("p", up).await;
    s.proxy("q", up).await;
    s.call("POST", "/proxies/p/toxics", Some(r#"{"type":"timeout"}"#))
        .await;
    s.call("PATCH", "/proxies/q", Some(r#"{"enabled":false}"#))
        .await;
    let r = s.call("POST", "/reset", None).await;
    assert_eq!((r.status, r.text.as_str()), (204, ""));
    let all = s.call("GET", "/proxies", None).await.json;
    assert_eq!(all["p"]["toxics"], json!([]));
    assert_eq!(all["q"]["enabled"], true);
    round_trip(&mut connected(listen).await, b"clean").await;
}

#[tokio::test]
async fn unknown_endpoint_is_404_and_wrong_method_is_405_both_as_json() {
    let s = server(&[]).await;
    let a = s.call("GET", "/nope", None).await;
    assert_eq!(
        (a.status, a.json),
        (404, error_body("no such endpoint: /nope", 404))
    );
    let a = s.call("DELETE", "/proxies", None).await;
    assert_eq!(
        (a.status, a.json),
        (405, error_body("method not allowed", 405))
    );
}

#[tokio::test]
async fn an_http_mode_proxy_takes_http_status_toxics_and_a_tcp_one_refuses_them() {
    let s = server(&[]).await;
    let up = echo().await;
    let a = s
        .call(
            "POST",
            "/proxies",
            Some(&format!(
                r#"{{"name":"web","upstream":"{up}","mode":"http"}}"#
            )),
        )
        .await;
    assert_eq!((a.status, a.json["mode"].clone()), (201, json!("http")));
    let listen = a.json["listen"].as_str().unwrap().to_string();
    let t = s
        .call(
            "POST",
            "/proxies/web/toxics",
            Some(r#"{"type":"http_status","attributes":{"code":503,"body":"down"}}"#),
        )
        .await;
    assert_eq!(t.status, 200, "{}", t.text);
    let resp = Server::client()
        .get(format!("http://{listen}/x"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 503);
    assert_eq!(resp.text().await.unwrap(), "down");
    s.proxy("raw", up).await;
    let t = s
        .call(
            "POST",
            "/proxies/raw/toxics",
            Some(r#"{"type":"http_status"}"#),
        )
        .await;
    assert_eq!(t.status, 400);
}

#[tokio::test]
async fn metrics_count_bytes_per_proxy_and_direction_with_toxiproxy_names() {
    let s = server(&[]).await;
    let up = echo().await;
    let listen = s.proxy("db", up).await;
    let mut c = connected(listen).await;
    round_trip(&mut c, &[7u8; 1000]).await;
    drop(c);
    let lines: Vec<String> = [
        ("toxiproxy_proxy_received_bytes_total", "upstream"),
        ("toxiproxy_proxy_sent_bytes_total", "upstream"),
        ("toxiproxy_proxy_received_bytes_total", "downstream"),
        ("toxiproxy_proxy_sent_bytes_total", "downstream"),
    ]
    .iter()
    .map(|(name, dir)| {
        format!("{name}{{direction=\"{dir}\",listener=\"{listen}\",proxy=\"db\",upstream=\"{up}\"}} 1000\n")
    })
    .collect();
    // The proxy counts a write after it completes, which may be just after
    // the client has read the echo: poll briefly.
    let deadline = Instant::now() + Duration::from_secs(5);
    let m = loop {
        let m = s.call("GET", "/metrics", None).await;
        if lines.iter().all(|l| m.text.contains(l)) || Instant::now() > deadline {
            break m;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(m.status, 200);
    assert!(
        m.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    for line in &lines {
        assert!(m.text.contains(line), "missing {line:?} in\n{}", m.text);
    }
    assert!(
        m.text
            .contains("# TYPE toxiproxy_proxy_sent_bytes_total counter\n")
    );
}

#[tokio::test]
async fn an_http_mode_proxy_made_through_the_api_answers_h2c_with_its_toxics() {
    let s = server(&[]).await;
    let up = echo().await;
    let a = s
        .call(
            "POST",
            "/proxies",
            Some(&format!(
                r#"{{"name":"web","upstream":"{up}","mode":"http"}}"#
            )),
        )
        .await;
    assert_eq!(a.status, 201, "{}", a.text);
    let listen = a.json["listen"].as_str().unwrap().to_string();
    let t = s
        .call(
            "POST",
            "/proxies/web/toxics",
            Some(r#"{"type":"http_status","attributes":{"code":503,"body":"down"}}"#),
        )
        .await;
    assert_eq!(t.status, 200, "{}", t.text);
    let h2c = reqwest::Client::builder()
        .http2_prior_knowledge()
        .timeout(std::time::Duration::from_secs(30))
        .build()
        .unwrap();
    let resp = h2c.get(format!("http://{listen}/x")).send().await.unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    assert_eq!(resp.status().as_u16(), 503);
    assert_eq!(resp.text().await.unwrap(), "down");
}
