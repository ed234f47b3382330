//! Tests of the request records: what a record holds, how it is written
//! and read back, and an agent's carried correlation header.
use super::*;

/// Records of a long run, with times no decimal holds exactly.
fn records(n: u32) -> Vec<Record> {
    let proxy: Arc<str> = Arc::from("inventory");
    (0..n)
        .map(|i| Record {
            at_ms: 0.1 + f64::from(i) / 3.0,
            proxy: proxy.clone(),
            method: if i % 2 == 0 {
                Method::GET
            } else {
                Method::PATCH
            },
            http2: i % 3 == 0,
            path: format!("/inventory/{i}"),
            request_id: (i % 2 == 0).then_some(u64::from(i)),
            carried: (i % 2 == 1).then(|| Carried {
                header: "traceparent".to_string(),
                value: format!("00-{i:032x}-{i:016x}-01"),
            }),
            status: (i % 3 != 0).then_some(200),
            fault: (i % 3 == 0).then(|| "inventory-down".to_string()),
            latency_ms: (i % 3 != 0).then(|| f64::from(i).sqrt()),
            closed_after_ms: (i % 3 == 0).then(|| f64::from(i) / 7.0),
            bytes_in: u64::from(i),
            bytes_out: 2,
            reached_upstream: i % 3 != 0,
            grpc_status: (i % 3 == 1).then_some(u8::try_from(i % 17).unwrap()),
        })
        .collect()
}

#[tokio::test]
async fn a_grpc_answers_status_is_recorded_from_its_head_or_its_trailers_and_only_for_grpc() {
    let collected = Arc::new(Collected::default());
    let recorder = Recorder::new("inventory", clock::now(), Some(collected.clone()));
    let req = Request::post("/inventory.Inventory/Get").body(()).unwrap();
    let mut not_grpc = Response::new(crate::http::body::full("x"));
    not_grpc
        .headers_mut()
        .insert("grpc-status", http::HeaderValue::from_static("14"));
    for resp in [
        grpc::answered_call(b"sku-1"),
        grpc::failed_call("UNAVAILABLE".parse().unwrap(), "down"),
        not_grpc,
    ] {
        let passed = recorder.begin(&req, clock::now()).answered(resp);
        passed.into_body().collect().await.unwrap();
    }
    let statuses: Vec<Option<u8>> = collected.records().iter().map(|r| r.grpc_status).collect();
    assert_eq!(statuses, [Some(0), Some(14), None]);
    let counters = recorder.counters().unwrap();
    let counted: Vec<u64> = (0..=16).map(|code| counters.grpc(code)).collect();
    let mut want = vec![0; 17];
    (want[0], want[14]) = (1, 1);
    assert_eq!(
        counted, want,
        "one OK, one UNAVAILABLE, the HTTP answer none"
    );
    // Counting only (no records): the trailers are still read.
    let counting = Recorder::new("inventory", clock::now(), None);
    let passed = counting
        .begin(&req, clock::now())
        .answered(grpc::answered_call(b"x"));
    assert_eq!(
        counting.counters().unwrap().grpc(0),
        0,
        "not before the trailers"
    );
    passed.into_body().collect().await.unwrap();
    assert_eq!(counting.counters().unwrap().grpc(0), 1);
    let mut page = crate::metrics::Exposition::default();
    crate::metrics::MetricSource::collect(&**counters, &mut page);
    let text = page.render();
    for line in [
        "firedrill_proxy_grpc_responses_total{proxy=\"inventory\",grpc_status=\"OK\"} 1",
        "firedrill_proxy_grpc_responses_total{proxy=\"inventory\",grpc_status=\"UNAVAILABLE\"} 1",
    ] {
        assert!(text.contains(line), "{line}\n{text}");
    }
}

#[test]
fn collected_records_are_held_on_disk_and_come_back_exactly() {
    let collected = Collected::default();
    let sent = records(20_000);
    for r in &sent {
        collected.record(r);
    }
    let in_memory = collected.0.lock().unwrap().in_memory();
    assert_eq!(in_memory, 0, "records held in memory");
    assert_eq!(collected.records(), sent);
    assert!(collected.error().is_none());
}

#[test]
fn an_agents_record_keeps_the_carried_header_apart_and_the_drill_reads_it_with_its_seed() {
    let collected = Arc::new(Collected::default());
    let recorder = Recorder::with_raw_correlation("catalog", clock::now(), collected.clone());
    let correlation = crate::http::headers::Correlation {
        headers: vec![http::HeaderName::from_static(
            crate::http::headers::X_REQUEST_ID,
        )],
        seed: 7,
    };
    // Seed 7, request 41: a trace id made only of decimal digits.
    let trace = correlation.value(&correlation.headers[0], 41);
    let req = Request::get("/inventory/1")
        .header(crate::http::headers::X_REQUEST_ID, trace.clone())
        .body(())
        .unwrap();
    drop(recorder.begin(&req, clock::now()));
    let mut record = collected.records().remove(0);
    assert_eq!(record.request_id, None, "an agent knows no seed");
    let carried = record.carried.clone().expect("the header as it came");
    assert_eq!(
        (carried.header.as_str(), carried.value.as_str()),
        ("x-request-id", trace.to_str().unwrap())
    );
    // Through the agent's JSON to the drill, and read there.
    let wire = serde_json::to_string(&record).unwrap();
    record = serde_json::from_str(&wire).unwrap();
    assert_eq!(record.load_request(Some(&correlation)), Some(41));
    assert_eq!(record.load_request(None), None, "no seed, no id");
    // firedrill's own header wins, in its decimal form only.
    record.request_id = Some(5);
    assert_eq!(record.load_request(Some(&correlation)), Some(5));
}

#[test]
fn a_request_id_is_written_as_a_decimal_string_and_only_that_form_is_read_back() {
    let mut record = records(1).remove(0);
    record.request_id = Some(42);
    let line = serde_json::to_string(&record).unwrap();
    assert!(line.contains("\"request_id\":\"42\""), "{line}");
    // An older agent wrote the raw trace id there: it is not an id.
    let old = line.replace("\"42\"", "\"00000000000000078000000000000029\"");
    let read: Record = serde_json::from_str(&old).unwrap();
    assert_eq!(read.request_id, None);
    let none = line.replace("\"42\"", "null");
    assert_eq!(
        serde_json::from_str::<Record>(&none).unwrap().request_id,
        None
    );
}

/// A gRPC call with `grpc-timeout: TIMEOUT`, left by its client (its log
/// dropped without an answer) `after` its arrival: its record's status.
async fn left_after(timeout: &'static str, after: Duration) -> Option<u8> {
    let collected = Arc::new(Collected::default());
    let recorder = Recorder::new("inventory", clock::now(), Some(collected.clone()));
    let req = Request::post("/inventory.Inventory/Watch")
        .header("content-type", "application/grpc")
        .header("grpc-timeout", timeout)
        .body(())
        .unwrap();
    let log = recorder.begin(&req, clock::now());
    tokio::time::advance(after).await;
    drop(log);
    let records = collected.records();
    assert_eq!(records.len(), 1, "written as the log is dropped");
    assert_eq!(records[0].status, None, "no answer was sent");
    records[0].grpc_status
}

#[tokio::test(start_paused = true)]
async fn a_grpc_call_its_client_leaves_at_its_deadline_is_recorded_deadline_exceeded() {
    let ms = Duration::from_millis;
    // The client's deadline comes a little before the one counted from
    // the arrival: its cancel may beat the proxy's own answer.
    // A call that reached the proxy late (a busy machine) is left by its
    // client well before the proxy's deadline: its second half counts.
    assert_eq!(left_after("500m", ms(499)).await, Some(4));
    assert_eq!(left_after("500m", ms(250)).await, Some(4));
    assert_eq!(left_after("500m", ms(700)).await, Some(4));
    // Left in its first half: a cancel, no status.
    assert_eq!(left_after("500m", ms(249)).await, None);
    assert_eq!(left_after("500m", ms(100)).await, None);
    // A long deadline: its last second counts.
    assert_eq!(left_after("30S", ms(29_000)).await, Some(4));
    assert_eq!(left_after("30S", ms(28_999)).await, None);
}

#[tokio::test(start_paused = true)]
async fn a_call_without_a_grpc_deadline_left_by_its_client_has_no_grpc_status() {
    let collected = Arc::new(Collected::default());
    let recorder = Recorder::new("inventory", clock::now(), Some(collected.clone()));
    let grpc_without_timeout = Request::post("/inventory.Inventory/Get")
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let http_with_timeout = Request::get("/inventory/1")
        .header("grpc-timeout", "1m")
        .body(())
        .unwrap();
    for req in [grpc_without_timeout, http_with_timeout] {
        let log = recorder.begin(&req, clock::now());
        tokio::time::advance(Duration::from_secs(1)).await;
        drop(log);
    }
    let statuses: Vec<Option<u8>> = collected.records().iter().map(|r| r.grpc_status).collect();
    assert_eq!(statuses, [None, None]);
}
