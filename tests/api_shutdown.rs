//! `firedrill server` under toxics that hold or slice at the top of their
//! ranges: DELETE and `GET /proxies` still answer, and SIGTERM ends the
//! process. Real process, loopback only.

mod api_support;

use api_support::{echo, server};
use tokio::io::AsyncWriteExt;

#[tokio::test]
async fn sigterm_stops_the_server_while_toxics_at_the_top_of_their_ranges_hold_connections() {
    let mut s = server(&[]).await;
    let upstream = echo().await;
    for name in ["held", "other"] {
        let listen = s.proxy(name, upstream).await;
        for toxic in [
            r#"{"type":"slicer","attributes":{"average_size":9223372036854775807,"size_variation":9223372036854775806,"delay":9223372036854775807}}"#,
            r#"{"type":"latency","stream":"upstream","attributes":{"latency":9223372036854775807,"jitter":9223372036854775807}}"#,
            r#"{"type":"timeout","attributes":{"timeout":0}}"#,
            r#"{"type":"limit_data","stream":"upstream","attributes":{"bytes":9223372036854775807}}"#,
        ] {
            let a = s
                .call("POST", &format!("/proxies/{name}/toxics"), Some(toxic))
                .await;
            assert_eq!(a.status, 200, "{toxic}: {}", a.text);
        }
        let mut conn = tokio::net::TcpStream::connect(listen).await.unwrap();
        conn.write_all(&[7; 200_000]).await.unwrap();
        std::mem::forget(conn);
    }
    let refused = s
        .call(
            "POST",
            "/proxies/other/toxics",
            Some(r#"{"name":"wrap","type":"slicer","attributes":{"average_size":18446744073709551615}}"#),
        )
        .await;
    assert_eq!(refused.status, 400, "{}", refused.text);
    // Generous bounds on a real process: a hang is what fails.
    let bound = std::time::Duration::from_secs(30);
    let deleted = tokio::time::timeout(bound, s.call("DELETE", "/proxies/held", None))
        .await
        .expect("DELETE answers");
    assert_eq!(deleted.status, 204);
    let listed = tokio::time::timeout(bound, s.call("GET", "/proxies", None))
        .await
        .expect("GET /proxies answers");
    assert_eq!(listed.status, 200);
    let pid = s.child.id().expect("running").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(bound, s.child.wait())
        .await
        .expect("the server exits after SIGTERM")
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
}
