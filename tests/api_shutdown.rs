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
    let status = s.sigterm_and_wait(bound).await;
    assert_eq!(status.code(), Some(0), "{status:?}");
}

/// An upstream that reads and echoes on every connection, counting the
/// connections still open.
async fn counting_echo() -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::sync::atomic::Ordering;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let count = open.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let count = count.clone();
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let (mut r, mut w) = s.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
                count.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (addr, open)
}

/// Connections kept busy by toxics (one whose bytes are held an hour on
/// their way up, one answered at 1 KB/s, one sliced with sizes at the top
/// of their range; every client sending all along) do not
/// keep `firedrill server` from stopping on SIGTERM: it exits 0, as
/// documented, and every connection through its proxy is let go at both
/// ends (the toxics no longer hold anything).
#[tokio::test]
async fn sigterm_exits_0_and_lets_go_of_every_connection_busy_toxics_hold() {
    use std::sync::atomic::Ordering;
    use tokio::io::AsyncReadExt;
    let mut s = server(&[]).await;
    let (upstream, open_upstream) = counting_echo().await;
    let mut proxies = Vec::new();
    for (name, toxic) in [
        (
            "held",
            r#"{"type":"latency","stream":"upstream","attributes":{"latency":3600000}}"#,
        ),
        (
            "trickle",
            r#"{"type":"bandwidth","stream":"downstream","attributes":{"rate":1}}"#,
        ),
        (
            "sliced",
            r#"{"type":"slicer","stream":"upstream","attributes":{"average_size":9223372036854775807,"size_variation":9223372036854775806,"delay":1}}"#,
        ),
    ] {
        proxies.push(s.proxy(name, upstream).await);
        let a = s
            .call("POST", &format!("/proxies/{name}/toxics"), Some(toxic))
            .await;
        assert_eq!(a.status, 200, "{toxic}: {}", a.text);
    }
    // Generous bounds on a real process: what fails is a hang.
    let bound = std::time::Duration::from_secs(60);
    let mut clients = Vec::new();
    for listen in proxies {
        let conn = tokio::net::TcpStream::connect(listen).await.unwrap();
        let (mut read, mut write) = conn.into_split();
        // Sends for as long as the connection takes it.
        tokio::spawn(async move {
            while write.write_all(&[7; 16 * 1024]).await.is_ok() {
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        });
        // Reads until the connection ends: what the proxy let go of.
        clients.push(tokio::spawn(async move {
            let mut buf = vec![0; 64 * 1024];
            loop {
                match read.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        }));
    }
    // Every connection reached the upstream before the stop.
    tokio::time::timeout(bound, async {
        while open_upstream.load(Ordering::SeqCst) < 3 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("every connection reaches the upstream");
    let status = s.sigterm_and_wait(bound).await;
    assert_eq!(status.code(), Some(0), "{status:?}");
    for client in clients {
        tokio::time::timeout(bound, client)
            .await
            .expect("the client's connection is let go")
            .unwrap();
    }
    tokio::time::timeout(bound, async {
        while open_upstream.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the upstream's connections are let go");
}
