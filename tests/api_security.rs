//! The control plane's defenses: a non-loopback bind needs a token (exit 2,
//! invalid arguments, before anything is bound), a token is then required
//! on every request (401), browsers are refused (403), bodies are limited
//! (413), and names with control characters cannot forge log lines.
//! Real process, loopback only.

mod api_support;

use api_support::{echo, error_body, server, server_logging, server_with_env};
use assert_cmd::Command;

#[test]
fn a_non_loopback_host_without_a_token_is_refused_at_start_with_exit_2() {
    let out = Command::cargo_bin("firedrill")
        .unwrap()
        .args(["server", "--host", "0.0.0.0", "--port", "0"])
        .env_remove("FIREDRILL_API_TOKEN")
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--host 0.0.0.0: not a loopback address") && stderr.contains("--api-token"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing may be served");
}

#[test]
fn a_token_over_plain_http_off_loopback_is_refused_at_start_with_exit_2_unless_insecure() {
    let out = Command::cargo_bin("firedrill")
        .unwrap()
        .args([
            "server",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--api-token",
            "t",
        ])
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("in clear")
            && stderr.contains("--tls-cert")
            && stderr.contains("--insecure"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing may be served");
}

#[tokio::test]
async fn with_a_token_a_request_without_it_or_with_a_wrong_one_gets_401() {
    let s = server(&["--api-token", "s3cret"]).await;
    let a = s.call("GET", "/proxies", None).await;
    assert_eq!(a.status, 401);
    assert_eq!(
        a.json,
        error_body(
            "missing or wrong token: send Authorization: Bearer <token>",
            401
        )
    );
    assert_eq!(a.headers["www-authenticate"], "Bearer");
    let a = s
        .call_with(
            "GET",
            "/proxies",
            None,
            &[("authorization", "Bearer s3cre")],
        )
        .await;
    assert_eq!(a.status, 401);
    let a = s
        .call_with(
            "GET",
            "/proxies",
            None,
            &[("authorization", "Bearer s3cret")],
        )
        .await;
    assert_eq!(a.status, 200, "{}", a.text);
}

#[tokio::test]
async fn the_token_can_come_from_the_environment() {
    let s = server_with_env(&[], &[("FIREDRILL_API_TOKEN", "from-env")]).await;
    assert_eq!(s.call("GET", "/version", None).await.status, 401);
    let a = s
        .call_with(
            "GET",
            "/version",
            None,
            &[("authorization", "Bearer from-env")],
        )
        .await;
    assert_eq!(a.status, 200);
}

#[tokio::test]
async fn a_mozilla_user_agent_or_a_foreign_origin_gets_403_and_a_loopback_origin_does_not() {
    let s = server(&[]).await;
    let a = s
        .call_with(
            "POST",
            "/reset",
            None,
            &[(
                "user-agent",
                "Mozilla/5.0 (X11; Linux x86_64) Firefox/140.0",
            )],
        )
        .await;
    assert_eq!(
        (a.status, a.json),
        (403, error_body("User agent not allowed", 403))
    );
    let a = s
        .call_with(
            "POST",
            "/reset",
            None,
            &[("origin", "https://evil.example")],
        )
        .await;
    assert_eq!(a.status, 403);
    assert_eq!(
        a.json["error"],
        "origin not allowed: https://evil.example is not on loopback"
    );
    let a = s
        .call_with(
            "POST",
            "/reset",
            None,
            &[("origin", "http://localhost:3000")],
        )
        .await;
    assert_eq!(a.status, 204);
}

#[tokio::test]
async fn a_one_mebibyte_body_gets_413() {
    let s = server(&[]).await;
    let big = format!(r#"{{"name":"x","upstream":"{}"}}"#, "a".repeat(1 << 20));
    let a = s.call("POST", "/proxies", Some(&big)).await;
    assert_eq!(a.status, 413);
    assert_eq!(
        a.json,
        error_body("request body larger than 65536 bytes", 413)
    );
    assert_eq!(s.call("GET", "/proxies/x", None).await.status, 404);
}

/// `name` percent-encoded as one path segment.
fn segment(name: &str) -> String {
    name.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A proxy and a toxic whose names hold a newline, a bell and an escape
/// are logged with those characters escaped (`\n`, `\u{7}`, `\u{1b}`):
/// no line of `firedrill server`'s log starts with the text after the
/// newline, and no control character reaches it.
#[tokio::test]
async fn proxy_and_toxic_names_with_control_characters_are_logged_escaped() {
    let mut s = server_logging("info").await;
    let upstream = echo().await;
    let proxy = "evil\nINFO forged: proxy\u{7}\u{1b}[31m";
    let toxic = "bad\nINFO forged: toxic";
    let created = s
        .call(
            "POST",
            "/proxies",
            Some(&serde_json::json!({"name": proxy, "listen": "127.0.0.1:0", "upstream": upstream.to_string()}).to_string()),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text);
    let listen = created.json["listen"].as_str().unwrap().to_string();
    let added = s
        .call(
            "POST",
            &format!("/proxies/{}/toxics", segment(proxy)),
            Some(&serde_json::json!({"name": toxic, "type": "latency", "attributes": {"latency": 1}}).to_string()),
        )
        .await;
    assert_eq!(added.status, 200, "{}", added.text);
    // Traffic through the toxic logs its first injection, with its name.
    let mut conn = tokio::net::TcpStream::connect(&listen).await.unwrap();
    tokio::io::AsyncWriteExt::write_all(&mut conn, b"ping")
        .await
        .unwrap();
    let mut echoed = [0u8; 4];
    tokio::io::AsyncReadExt::read_exact(&mut conn, &mut echoed)
        .await
        .unwrap();
    drop(conn);
    let deleted = s
        .call("DELETE", &format!("/proxies/{}", segment(proxy)), None)
        .await;
    assert_eq!(deleted.status, 204, "{}", deleted.text);
    s.sigterm();
    let mut stderr = s.child.stderr.take().unwrap();
    let mut log = String::new();
    let bound = std::time::Duration::from_secs(60);
    tokio::time::timeout(
        bound,
        tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut log),
    )
    .await
    .expect("the server exits after SIGTERM")
    .unwrap();
    let escaped_proxy = "proxy=evil\\nINFO forged: proxy\\u{7}\\u{1b}[31m";
    for (what, escaped) in [
        ("proxy started", escaped_proxy),
        ("proxy stopped", escaped_proxy),
        ("fault injected", "fault=bad\\nINFO forged: toxic"),
    ] {
        assert!(
            log.lines().any(|l| l.contains(what) && l.contains(escaped)),
            "no {what:?} line with {escaped:?} in:\n{log}"
        );
    }
    assert!(
        !log.lines().any(|l| l.starts_with("INFO forged")),
        "a forged line:\n{log}"
    );
    assert!(
        !log.contains(['\u{7}', '\u{1b}']),
        "a control character reached the log:\n{log:?}"
    );
}
