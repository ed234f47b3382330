//! The end of a user's service's run (its breakers inferred, the
//! expectations' tallies, the dependency calls written out) needs the same
//! memory whatever the number of requests: a long game day must not fail
//! at its last second. A counting allocator measures the peak of live heap
//! bytes over that end, for a run and for one twice as long; the
//! difference per extra request must stay far below what keeping the
//! requests in memory costs (about 0.7 KB each).
//!
//! Allocation counts are deterministic for a given input: no time, no
//! threshold on a machine's speed. Both runs are longer than a few sort
//! runs (16,384 items each): below that, the peak still grows while the
//! one run held in memory fills up (measured: 6.7 MB at 20,000 requests,
//! 7.9 MB at 40,000 and 160,000). Twice rather than four times as long
//! keeps the test under a minute unoptimised; either length holds the
//! same peak.

// The second reviewed exception to `unsafe_code = "deny"`: an allocator
// that counts must implement `GlobalAlloc`, an unsafe trait; it forwards
// every call to the system allocator unchanged.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use firedrill::experiment::blackbox::inferred::{Seen, breakers};
use firedrill::experiment::kept::{KeptLists, KeptRequest};
use firedrill::experiment::timeline::{PerRequest, RequestRecord, TargetHit, Timeline};
use firedrill::fault::plan::Arrival;
use firedrill::proxy::record::{Record, Spilled};
use firedrill::spill::{Replay, Spill};

/// Live heap bytes, and the most there were since the last reset.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every call is passed on to the system allocator unchanged; the
// counters only add and subtract sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        // SAFETY: the caller's layout goes to the system allocator as is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let grown = new_size - layout.size();
            let live = LIVE.fetch_add(grown, Ordering::Relaxed) + grown;
            PEAK.fetch_max(live, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: as `alloc` and `dealloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One measurement at a time: the counters are the process's.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

const DRILL: &str = r#"
name: flat memory
duration: 60s
clock: real
system:
  url: http://127.0.0.1:9
  breakers:
    inventory: { dependency: inventory, wait_in_open: 2s, probes: 3 }
dependencies:
  inventory:
    listen: 127.0.0.1:9
    builtin:
      routes:
        - { path: /inventory/*, latency: 2ms }
load:
  - { name: shop, request: GET /inventory/sku-1, rate: 500/s, timeout: 2s }
expect:
  - breaker inventory opens at least 2 times
  - route shop success >= 50%
  - route shop p99 latency < 1s
  - calls to /inventory/* while inventory is open <= 10
"#;

/// A run of `n` requests, one every 2 ms, against a service whose
/// dependency fails 4 s of every 12 s: it trips its breaker after 5
/// failures, answers from a fallback while open (no call), and sends a
/// trial 2 s later.
fn run_of(
    n: u64,
) -> (
    Spill<KeptRequest>,
    Spill<TargetHit>,
    Spill<Spilled>,
    Vec<Arrival>,
) {
    let ms = Duration::from_millis;
    let (mut requests, mut hits, mut calls) = (Spill::new(), Spill::new(), Spill::new());
    let mut arrivals = Vec::new();
    let (mut failures, mut open_until) = (0, None::<Duration>);
    for id in 0..n {
        let sent = ms(2 * id);
        let down = (sent.as_millis() % 12_000) >= 8_000;
        let mut r = RequestRecord::sent(id, "shop", "/inventory/sku-1", sent);
        r.status = Some(200);
        let open = open_until.is_some_and(|until| sent < until);
        if open {
            r.latency = Some(ms(1));
            requests.push(&KeptRequest::from(r));
            continue;
        }
        let at = sent + ms(1);
        let record = Record {
            at_ms: at.as_secs_f64() * 1000.0,
            proxy: std::sync::Arc::from("inventory"),
            method: http::Method::GET,
            http2: false,
            path: "/inventory/sku-1".to_string(),
            request_id: Some(id),
            carried: None,
            status: Some(if down { 503 } else { 200 }),
            fault: down.then(|| "inventory-flap".to_string()),
            latency_ms: Some(if down { 0.5 } else { 2.0 }),
            closed_after_ms: None,
            bytes_in: 0,
            bytes_out: 20,
            reached_upstream: !down,
            grpc_status: None,
        };
        calls.push(&Spilled::from(&record));
        let hit = TargetHit {
            at,
            path: "/inventory/sku-1".to_string(),
            request_id: Some(id),
            instance: None,
        };
        hits.push(&hit);
        arrivals.push(Arrival {
            at,
            path: hit.path.clone(),
            request_id: Some(id),
        });
        r.latency = Some(ms(if down { 2 } else { 4 }));
        failures = if down { failures + 1 } else { 0 };
        if failures >= 5 {
            open_until = Some(sent + ms(2_000));
            failures = 0;
        }
        requests.push(&KeptRequest::from(r));
    }
    (requests, hits, calls, arrivals)
}

/// The peak of live heap bytes over the end of a run of `n` requests,
/// above those live when it began; and the breaker's inferred transitions
/// (proof the end did its work).
fn end_of_run(n: u64) -> (usize, usize) {
    let loaded =
        firedrill::experiment::file::load_text("flat.yaml", DRILL).expect("the drill loads");
    let experiment = &loaded.experiment;
    let system = experiment.system.as_ref().expect("a system drill");
    let (requests, hits, calls, arrivals) = run_of(n);
    // The arrivals of a real run are on disk too; here they stand in
    // memory before the measure starts, and are read through the same
    // pass.
    let arrivals = Mutex::new({
        let mut spill = Spill::new();
        arrivals.iter().for_each(|a| spill.push(a));
        spill
    });
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);

    let kept = KeptLists::new(requests, hits, calls);
    let records = CallsOf(&kept);
    let seen = [Seen {
        name: "inventory",
        arrivals: &arrivals as &dyn Replay<Arrival>,
        records: &records,
        lost: None,
    }];
    let duration = Duration::from_millis(2 * n);
    let (transitions, infos, failed) =
        breakers(system, &experiment.load, kept.requests(), &seen, duration);
    assert!(failed.is_none(), "{failed:?}");
    let timeline = Timeline {
        duration,
        transitions: transitions.clone(),
        breakers: infos,
        kept: Some(kept),
        ..Timeline::default()
    };
    let mut tallied = 0;
    for e in &loaded.expectations {
        let tally = firedrill::experiment::expect::tally(e, &timeline);
        tallied += usize::from(tally != Default::default());
    }
    assert!(tallied >= 2, "the route and calls sentences counted");
    let mut written = 0usize;
    timeline.each_dependency_request(&mut |r| {
        written += serde_json::to_vec(r).map_or(0, |v| v.len());
    });
    assert!(written > 0);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    (peak, transitions.len())
}

/// A kept run's dependency calls, as the inference reads them.
struct CallsOf<'a>(&'a KeptLists);

impl Replay<Record> for CallsOf<'_> {
    fn replay(&self, take: &mut dyn FnMut(Record)) {
        self.0.each_call(&mut |r| take(r.clone()));
    }
}

#[test]
fn the_end_of_a_kept_run_needs_the_same_memory_for_twice_the_requests() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let (short, long) = (40_000, 80_000);
    let (peak_short, flaps_short) = end_of_run(short);
    let (peak_long, flaps_long) = end_of_run(long);
    assert!(
        flaps_short >= 6 && flaps_long > flaps_short,
        "the breaker was inferred: {flaps_short} then {flaps_long} transitions"
    );
    let per_extra = peak_long.saturating_sub(peak_short) as f64 / (long - short) as f64;
    eprintln!(
        "peak above the start: {peak_short} B for {short} requests, {peak_long} B for {long}: {per_extra:.2} B per extra request"
    );
    assert!(
        per_extra < 20.0,
        "peak {peak_short} B for {short} requests, {peak_long} B for {long}: {per_extra:.1} B per extra request"
    );
}
