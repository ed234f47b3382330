//! Every TCP toxic of the control plane, on each stream, against what
//! Toxiproxy 2.12's source does (the file is named on each table): what
//! bytes arrive at each end, and whether and when each end sees its
//! connection end (FIN, RST, or still open).
//!
//! Each row is one exchange over real loopback sockets: a client, a
//! `firedrill server` proxy (in process, the API's own registry) with one
//! toxic, and a scripted upstream. Times are lower bounds measured from the
//! client's connect; an end that is due must come within [`DEADLINE`], and
//! "open" means nothing ended before it. Rows of a table run concurrently.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;

use firedrill::api::registry::Registry;
use firedrill::api::toxic::{TYPES, ToxicInput};
use futures_util::future::join_all;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::time::Instant;

/// How long an end waits for its connection to end: generous, so a busy
/// machine does not turn a due end into "open".
const DEADLINE: Duration = Duration::from_secs(8);

/// How the two ends behave.
#[derive(Debug, Clone, Copy)]
struct Script {
    /// Bytes the client sends at once after connecting.
    request: usize,
    /// Bytes the upstream answers.
    response: usize,
    /// The upstream answers once the whole request arrived (or its read
    /// ended); otherwise as soon as it accepts.
    upstream_waits: bool,
    /// The client half-closes after its request.
    client_hangs_up: bool,
    /// The upstream closes after its response.
    upstream_hangs_up: bool,
}

/// Request, response, close: the upstream answers the request and closes.
const EXCHANGE: Script = Script {
    request: 1000,
    response: 1000,
    upstream_waits: true,
    client_hangs_up: false,
    upstream_hangs_up: true,
};

/// Like [`EXCHANGE`], but nobody closes.
const KEEP_OPEN: Script = Script {
    upstream_hangs_up: false,
    ..EXCHANGE
};

/// Both ends speak at once and nobody closes: each stream on its own.
const BOTH_SPEAK: Script = Script {
    upstream_waits: false,
    ..KEEP_OPEN
};

/// How an end's connection ended, as it saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    /// EOF (FIN).
    Eof,
    /// ECONNRESET (RST).
    Reset,
    /// EOF or RST: the expectation does not tell them apart.
    Closed,
    /// Nothing by the deadline.
    Open,
}

/// What one end sees.
#[derive(Debug, Clone, Copy)]
struct Sees {
    /// Bytes received; `None` where the order of two events decides it.
    bytes: Option<usize>,
    /// The last byte arrives no sooner (ms).
    data_after: u64,
    /// How the connection ends.
    end: End,
    /// And no sooner (ms).
    end_after: u64,
}

/// `bytes` then `end`, no timing.
const fn sees(bytes: usize, end: End) -> Sees {
    Sees {
        bytes: Some(bytes),
        data_after: 0,
        end,
        end_after: 0,
    }
}

impl Sees {
    const fn data_after(self, ms: u64) -> Sees {
        Sees {
            data_after: ms,
            ..self
        }
    }

    const fn end_after(self, ms: u64) -> Sees {
        Sees {
            end_after: ms,
            ..self
        }
    }

    const fn any_bytes(self) -> Sees {
        Sees {
            bytes: None,
            ..self
        }
    }
}

/// One row: a toxic on a stream, the script, and what each end sees.
#[derive(Debug, Clone, Copy)]
struct Row {
    /// The toxic type.
    toxic: &'static str,
    /// Its attributes, JSON.
    attributes: &'static str,
    /// `upstream` or `downstream`.
    stream: &'static str,
    script: Script,
    client: Sees,
    upstream: Sees,
}

/// What one end saw.
#[derive(Debug, Clone, Copy)]
struct Seen {
    bytes: usize,
    last_byte: Option<Duration>,
    end: End,
    ended_at: Duration,
}

/// Reads until EOF, an error or the deadline; `got_request` is told when
/// `want` bytes arrived or the read ended.
async fn watch<R: AsyncRead + Unpin>(
    reader: &mut R,
    t0: Instant,
    want: usize,
    got_request: &Notify,
) -> Seen {
    let mut seen = Seen {
        bytes: 0,
        last_byte: None,
        end: End::Open,
        ended_at: DEADLINE,
    };
    let deadline = t0 + DEADLINE;
    let mut buf = vec![0u8; 65536];
    loop {
        let read = tokio::time::timeout_at(deadline, reader.read(&mut buf)).await;
        let end = match read {
            Err(_) => break,
            Ok(Ok(0)) => End::Eof,
            Ok(Ok(n)) => {
                seen.bytes += n;
                seen.last_byte = Some(t0.elapsed());
                if seen.bytes >= want {
                    got_request.notify_one();
                }
                continue;
            }
            Ok(Err(e)) if e.kind() == ErrorKind::ConnectionReset => End::Reset,
            Ok(Err(e)) => panic!("unexpected read error {e}"),
        };
        seen.end = end;
        seen.ended_at = t0.elapsed();
        break;
    }
    got_request.notify_one();
    if seen.end == End::Open {
        // Hold the socket past the other end's deadline, so closing it
        // cannot end the other end's watch before that.
        tokio::time::sleep_until(deadline + Duration::from_secs(1)).await;
    }
    seen
}

/// The scripted upstream: accepts one connection and plays its part.
async fn upstream(listener: TcpListener, script: Script, t0: Instant) -> Seen {
    let never = Seen {
        bytes: 0,
        last_byte: None,
        end: End::Open,
        ended_at: DEADLINE,
    };
    let Ok(Ok((stream, _))) = tokio::time::timeout(DEADLINE, listener.accept()).await else {
        return never;
    };
    let (mut reader, mut writer) = stream.into_split();
    let got_request = Notify::new();
    let speak = async {
        if script.upstream_waits {
            got_request.notified().await;
        }
        let _ = writer.write_all(&vec![b'd'; script.response]).await;
        if script.upstream_hangs_up {
            let _ = writer.shutdown().await;
        }
    };
    let (seen, ()) = tokio::join!(watch(&mut reader, t0, script.request, &got_request), speak);
    seen
}

/// Runs one row; `Err` says how it differs.
async fn run(row: Row) -> Result<(), String> {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_addr = listener.local_addr().unwrap();
    let registry = Registry::new(1);
    let proxy = registry
        .create(
            serde_json::from_value(json!({"name": "p", "upstream": upstream_addr.to_string()}))
                .unwrap(),
        )
        .await
        .unwrap();
    let toxic: ToxicInput = serde_json::from_value(json!({
        "type": row.toxic,
        "stream": row.stream,
        "attributes": serde_json::from_str::<serde_json::Value>(row.attributes).unwrap(),
    }))
    .unwrap();
    registry.add_toxic("p", toxic).await.unwrap();
    let proxy_addr: SocketAddr = proxy.listen.parse().unwrap();
    let t0 = Instant::now();
    let server = tokio::spawn(upstream(listener, row.script, t0));
    let client = async {
        let stream = match TcpStream::connect(proxy_addr).await {
            Ok(stream) => stream,
            Err(e) => panic!("connect: {e}: a proxy accepts before any toxic acts"),
        };
        let (mut reader, mut writer) = stream.into_split();
        let _ = writer.write_all(&vec![b'u'; row.script.request]).await;
        if row.script.client_hangs_up {
            let _ = writer.shutdown().await;
        }
        let seen = watch(&mut reader, t0, usize::MAX, &Notify::new()).await;
        drop(writer);
        seen
    };
    let client = client.await;
    let upstream = server.await.unwrap();
    registry.stop_all().await;
    let mut problems = Vec::new();
    for (name, want, seen) in [
        ("client", row.client, client),
        ("upstream", row.upstream, upstream),
    ] {
        if let Some(problem) = differs(want, seen) {
            problems.push(format!("{name} {problem}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} {} {}: {}",
            row.toxic,
            row.stream,
            row.attributes,
            problems.join("; ")
        ))
    }
}

/// How `seen` differs from `want`, if it does.
fn differs(want: Sees, seen: Seen) -> Option<String> {
    let ms = |d: Duration| d.as_millis() as u64;
    if want.bytes.is_some_and(|b| b != seen.bytes) {
        return Some(format!(
            "got {} bytes, expected {:?}",
            seen.bytes, want.bytes
        ));
    }
    if let Some(last) = seen.last_byte
        && ms(last) < want.data_after
    {
        return Some(format!(
            "got its last byte at {last:?}, expected no sooner than {} ms",
            want.data_after
        ));
    }
    let end_matches = match want.end {
        End::Closed => matches!(seen.end, End::Eof | End::Reset),
        end => end == seen.end,
    };
    if !end_matches {
        return Some(format!(
            "saw {:?} at {:?}, expected {:?}",
            seen.end, seen.ended_at, want.end
        ));
    }
    if want.end != End::Open && ms(seen.ended_at) < want.end_after {
        return Some(format!(
            "saw {:?} at {:?}, expected no sooner than {} ms",
            seen.end, seen.ended_at, want.end_after
        ));
    }
    None
}

/// Runs every row at once and reports every difference.
async fn check(rows: &[Row]) {
    let failures: Vec<String> = join_all(rows.iter().map(|row| run(*row)))
        .await
        .into_iter()
        .filter_map(Result::err)
        .collect();
    assert!(
        failures.is_empty(),
        "differs from Toxiproxy:\n{}",
        failures.join("\n")
    );
}

const fn row(
    toxic: &'static str,
    attributes: &'static str,
    stream: &'static str,
    script: Script,
    client: Sees,
    upstream: Sees,
) -> Row {
    Row {
        toxic,
        attributes,
        stream,
        script,
        client,
        upstream,
    }
}

use End::{Closed, Eof, Open, Reset};

/// Every byte both ways; the client's FIN from the upstream's close, the
/// upstream's once the client dropped.
const UNTOUCHED: (Sees, Sees) = (sees(1000, Eof), sees(1000, Eof));

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn noop_passes_everything_both_ways_on_either_stream() {
    // toxics/noop.go
    check(&[
        row(
            "noop",
            "{}",
            "downstream",
            EXCHANGE,
            UNTOUCHED.0,
            UNTOUCHED.1,
        ),
        row("noop", "{}", "upstream", EXCHANGE, UNTOUCHED.0, UNTOUCHED.1),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_delays_only_its_streams_data_and_the_close_behind_it() {
    // toxics/latency.go: each chunk leaves `latency` after it arrived.
    let lag = r#"{"latency": 400}"#;
    check(&[
        row(
            "latency",
            lag,
            "downstream",
            EXCHANGE,
            sees(1000, Eof).data_after(400).end_after(400),
            sees(1000, Eof),
        ),
        // The answer waits for the delayed request.
        row(
            "latency",
            lag,
            "upstream",
            EXCHANGE,
            sees(1000, Eof).data_after(400),
            sees(1000, Eof).data_after(400),
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bandwidth_rate_is_kilobytes_per_second_so_4000_bytes_at_10_take_400ms() {
    // toxics/bandwidth.go: a chunk of n bytes waits n / rate ms (rate in
    // KB/s is bytes per ms) before it leaves.
    let slow = r#"{"rate": 10}"#;
    let big_answer = Script {
        response: 4000,
        ..EXCHANGE
    };
    let big_request = Script {
        request: 4000,
        ..EXCHANGE
    };
    check(&[
        row(
            "bandwidth",
            slow,
            "downstream",
            big_answer,
            sees(4000, Eof).data_after(400),
            sees(1000, Eof),
        ),
        row(
            "bandwidth",
            slow,
            "upstream",
            big_request,
            sees(1000, Eof).data_after(400),
            sees(4000, Eof).data_after(400),
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_close_holds_back_only_its_streams_close() {
    // toxics/slow_close.go: data passes; the end waits `delay`.
    let slow = r#"{"delay": 400}"#;
    let client_closes = Script {
        client_hangs_up: true,
        ..EXCHANGE
    };
    check(&[
        row(
            "slow_close",
            slow,
            "downstream",
            EXCHANGE,
            sees(1000, Eof).end_after(400),
            sees(1000, Eof),
        ),
        row(
            "slow_close",
            slow,
            "upstream",
            client_closes,
            sees(1000, Eof),
            sees(1000, Eof).end_after(400),
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_holds_only_its_stream_and_closes_at_its_time_or_when_the_stream_ends() {
    // toxics/timeout.go: its stream's data is swallowed; the connection
    // closes `timeout` after the toxic started (never for 0), or at once
    // when the held stream ends. The other stream flows.
    let short = r#"{"timeout": 400}"#;
    let forever = r#"{"timeout": 0}"#;
    let client_closes = Script {
        client_hangs_up: true,
        ..BOTH_SPEAK
    };
    check(&[
        row(
            "timeout",
            short,
            "downstream",
            KEEP_OPEN,
            sees(0, Eof).end_after(400),
            sees(1000, Closed).end_after(400),
        ),
        row(
            "timeout",
            forever,
            "downstream",
            KEEP_OPEN,
            sees(0, Open),
            sees(1000, Open),
        ),
        row(
            "timeout",
            forever,
            "downstream",
            EXCHANGE,
            sees(0, Eof),
            sees(1000, Closed),
        ),
        row(
            "timeout",
            short,
            "upstream",
            BOTH_SPEAK,
            sees(1000, Eof).end_after(400),
            sees(0, Closed).end_after(400),
        ),
        row(
            "timeout",
            forever,
            "upstream",
            BOTH_SPEAK,
            sees(1000, Open),
            sees(0, Open),
        ),
        // Whether the answer got through before the close is a race.
        row(
            "timeout",
            forever,
            "upstream",
            client_closes,
            sees(0, Closed).any_bytes(),
            sees(0, Closed),
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_peer_lets_the_request_through_and_resets_once_its_stream_sees_data_plus_timeout() {
    // toxics/reset_peer.go and link.go: the first data (or end) of its
    // stream is swallowed, and `timeout` later both sockets close with
    // SO_LINGER 0 (RST at both ends). The client connects and the upstream
    // is dialled first.
    let at_once = r#"{"timeout": 0}"#;
    let later = r#"{"timeout": 400}"#;
    let silent_close = Script {
        response: 0,
        ..EXCHANGE
    };
    check(&[
        row(
            "reset_peer",
            at_once,
            "downstream",
            EXCHANGE,
            sees(0, Reset),
            sees(1000, Reset),
        ),
        row(
            "reset_peer",
            later,
            "downstream",
            EXCHANGE,
            sees(0, Reset).end_after(400),
            sees(1000, Reset).end_after(400),
        ),
        row(
            "reset_peer",
            at_once,
            "upstream",
            EXCHANGE,
            sees(0, Reset),
            sees(0, Reset),
        ),
        row(
            "reset_peer",
            later,
            "upstream",
            EXCHANGE,
            sees(0, Reset).end_after(400),
            sees(0, Reset).end_after(400),
        ),
        // The end of its stream arms it too: an upstream that closes
        // without a byte.
        row(
            "reset_peer",
            at_once,
            "downstream",
            silent_close,
            sees(0, Reset),
            sees(1000, Reset),
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slicer_halves_a_chunk_into_slices_each_followed_by_its_delay() {
    // toxics/slicer.go: 100 bytes at average 10 become 16 slices of 6-7
    // bytes, each followed by `delay` (µs): the last leaves after 15.
    let slicer = r#"{"average_size": 10, "size_variation": 0, "delay": 20000}"#;
    let small = Script {
        request: 100,
        response: 100,
        ..EXCHANGE
    };
    check(&[
        row(
            "slicer",
            slicer,
            "downstream",
            small,
            sees(100, Eof).data_after(300),
            sees(100, Eof),
        ),
        row(
            "slicer",
            slicer,
            "upstream",
            small,
            sees(100, Eof).data_after(300),
            sees(100, Eof).data_after(300),
        ),
    ])
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_data_passes_exactly_its_bytes_on_its_stream_then_closes_the_connection() {
    // toxics/limit_data.go: bytes are counted on its stream; at the limit
    // the link closes, and with it the other side.
    let limit = r#"{"bytes": 500}"#;
    check(&[
        row(
            "limit_data",
            limit,
            "downstream",
            EXCHANGE,
            sees(500, Eof),
            sees(1000, Closed),
        ),
        row(
            "limit_data",
            limit,
            "upstream",
            EXCHANGE,
            sees(0, Closed),
            sees(500, Closed),
        ),
    ])
    .await;
}

#[test]
fn every_tcp_toxic_type_has_a_table_here() {
    let source: String = include_str!("toxic_table.rs").split_whitespace().collect();
    for ty in TYPES
        .iter()
        .filter(|t| t.modes.tcp() && !t.name.starts_with("http_"))
    {
        for stream in ["downstream", "upstream"] {
            // A row names its type, then (after the attributes) its stream.
            let rows = source
                .split(&format!("row(\"{}\",", ty.name))
                .skip(1)
                .filter(|rest| {
                    rest.split(')')
                        .next()
                        .is_some_and(|args| args.contains(&format!("\"{stream}\"")))
                })
                .count();
            assert!(
                rows > 0,
                "{} has no {stream} row in tests/toxic_table.rs",
                ty.name
            );
        }
    }
}

/// A proxy `p` in front of an upstream that accepts one connection and
/// holds it open, sending 1000 bytes each time it is told to (once at
/// once); returns the proxy's address and the teller.
async fn proxy_to_holding_upstream(
    registry: &Registry,
) -> (SocketAddr, tokio::sync::mpsc::UnboundedSender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let upstream_addr = listener.local_addr().unwrap();
    let (tell, mut told) = tokio::sync::mpsc::unbounded_channel::<()>();
    tell.send(()).unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        while told.recv().await.is_some() {
            stream.write_all(&[b'd'; 1000]).await.unwrap();
        }
    });
    let proxy = registry
        .create(
            serde_json::from_value(json!({"name": "p", "upstream": upstream_addr.to_string()}))
                .unwrap(),
        )
        .await
        .unwrap();
    (proxy.listen.parse().unwrap(), tell)
}

async fn add_toxic(registry: &Registry, toxic: serde_json::Value) {
    registry
        .add_toxic("p", serde_json::from_value(toxic).unwrap())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_timeout_closes_the_connections_it_holds_at_once() {
    // toxics/timeout.go: `Cleanup` closes the stub, so link.go closes the
    // connection; the swallowed bytes are gone.
    let registry = Registry::new(1);
    let (proxy, _tell) = proxy_to_holding_upstream(&registry).await;
    add_toxic(&registry, json!({"type": "timeout", "name": "hold"})).await;
    let mut client = TcpStream::connect(proxy).await.unwrap();
    // Wait until the proxy has swallowed the upstream's bytes.
    let start = Instant::now();
    while registry.metrics().await[0]
        .telemetry
        .traffic
        .received(firedrill::fault::Direction::Downstream)
        < 1000
    {
        assert!(
            start.elapsed() < DEADLINE,
            "the upstream's bytes never reached the proxy"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    registry.delete_toxic("p", "hold").await.unwrap();
    let seen = watch(&mut client, Instant::now(), usize::MAX, &Notify::new()).await;
    assert_eq!((seen.bytes, seen.end), (0, End::Eof), "{seen:?}");
    registry.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_added_to_an_open_connection_counts_from_when_it_was_added() {
    // toxics/timeout.go: the timer starts when `Pipe` does, which for an
    // open connection is when the toxic is added (link.go `AddToxic`).
    let registry = Registry::new(1);
    let (proxy, _tell) = proxy_to_holding_upstream(&registry).await;
    let mut client = TcpStream::connect(proxy).await.unwrap();
    let mut first = vec![0u8; 1000];
    client.read_exact(&mut first).await.unwrap();
    tokio::time::sleep(Duration::from_millis(600)).await;
    let added = Instant::now();
    add_toxic(
        &registry,
        json!({"type": "timeout", "attributes": {"timeout": 400}}),
    )
    .await;
    let seen = watch(&mut client, added, usize::MAX, &Notify::new()).await;
    assert_eq!((seen.bytes, seen.end), (0, End::Eof), "{seen:?}");
    assert!(seen.ended_at >= Duration::from_millis(400), "{seen:?}");
    registry.stop_all().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limit_data_added_to_an_open_connection_counts_only_the_bytes_after_it() {
    // toxics/limit_data.go keeps its count in state made when the toxic is
    // added to the link (link.go `AddToxic`): earlier bytes do not count.
    let registry = Registry::new(1);
    let (proxy, tell) = proxy_to_holding_upstream(&registry).await;
    // A zero latency keeps the connection on the fault path from its start.
    add_toxic(&registry, json!({"type": "latency"})).await;
    let mut client = TcpStream::connect(proxy).await.unwrap();
    let mut first = vec![0u8; 1000];
    client.read_exact(&mut first).await.unwrap();
    add_toxic(
        &registry,
        json!({"type": "limit_data", "attributes": {"bytes": 500}}),
    )
    .await;
    tell.send(()).unwrap();
    let seen = watch(&mut client, Instant::now(), usize::MAX, &Notify::new()).await;
    assert_eq!((seen.bytes, seen.end), (500, End::Eof), "{seen:?}");
    registry.stop_all().await;
}
