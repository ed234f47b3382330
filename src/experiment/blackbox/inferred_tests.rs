use super::*;
use crate::experiment::config::{Service, SystemSpec};
use crate::fault::HttpMatch;
use crate::spill::TEST_RUN;
use indexmap::IndexMap;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use std::sync::Mutex;

/// A drill's lists: what the load sent, and what each dependency saw.
#[derive(Debug, Clone)]
struct Drill {
    system: SystemSpec,
    load: Vec<LoadRoute>,
    requests: Vec<RequestRecord>,
    /// Per dependency: its name, arrivals and records.
    dependencies: Vec<(String, Vec<Arrival>, Vec<Record>)>,
    duration: Duration,
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn route(name: &str, rate: f64) -> LoadRoute {
    LoadRoute {
        rate,
        ..LoadRoute::sent_elsewhere(name.to_string())
    }
}

/// A random drill from `seed`: requests with and without answers (some
/// after the end, ids out of order at times), calls with and without
/// ids (some of requests never sent), failed and let go, several breakers,
/// `via`, path filters.
fn drill(seed: u64) -> Drill {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let duration = ms(rng.random_range(2_000..6_000));
    let span = 6_500u64;
    // One drill in ten is a busy one.
    let scale = if seed.is_multiple_of(10) { 20 } else { 1 };
    let n = rng.random_range(0..80 * scale);
    let mut requests: Vec<RequestRecord> = (0..n)
        .map(|id| {
            let route = ["stock", "cart", "other"][rng.random_range(0..3)];
            let mut r = RequestRecord::sent(id, route, "/x", ms(rng.random_range(0..span)));
            r.latency = rng
                .random_bool(0.85)
                .then(|| ms(rng.random_range(0..1_500)));
            r
        })
        .collect();
    if rng.random_bool(0.2) && n > 2 {
        requests.swap(0, (n / 2) as usize);
    }
    let paths = ["/inventory/1", "/inventory/2", "/prices/7"];
    let dependency = |name: &str, rng: &mut rand_chacha::ChaCha8Rng, scale: u64| {
        let arrivals: Vec<Arrival> = (0..rng.random_range(0..60 * scale))
            .map(|_| Arrival {
                at: ms(rng.random_range(0..span)),
                path: paths[rng.random_range(0..3)].to_string(),
                request_id: None,
            })
            .collect();
        let by_id = rng.random_bool(0.5);
        let records: Vec<Record> = (0..rng.random_range(0..70 * scale))
            .map(|_| {
                let status = [None, Some(200), Some(503)][rng.random_range(0..3)];
                let took = rng.random_range(0..2_000) as f64 / 4.0;
                Record {
                    at_ms: rng.random_range(0..span * 2) as f64 / 2.0,
                    proxy: std::sync::Arc::from(name),
                    method: http::Method::GET,
                    http2: false,
                    path: paths[rng.random_range(0..3)].to_string(),
                    request_id: (by_id && rng.random_bool(0.9)).then(|| rng.random_range(0..n + 5)),
                    carried: None,
                    status,
                    fault: None,
                    latency_ms: status.map(|_| took),
                    closed_after_ms: (status.is_none() && rng.random_bool(0.8)).then_some(took),
                    bytes_in: 0,
                    bytes_out: 0,
                    reached_upstream: rng.random_bool(0.8),
                    grpc_status: None,
                }
            })
            .collect();
        (name.to_string(), arrivals, records)
    };
    let dependencies = vec![
        dependency("inventory", &mut rng, scale),
        dependency("edge", &mut rng, scale),
    ];
    let mut breakers = IndexMap::new();
    for b in 0..rng.random_range(1..4) {
        let routes = match rng.random_range(0..3) {
            0 => vec![],
            1 => vec!["stock".to_string()],
            _ => vec!["cart".to_string(), "stock".to_string()],
        };
        let breaker = InferredBreaker {
            dependency: "inventory".to_string(),
            routes,
            path: rng
                .random_bool(0.4)
                .then(|| HttpMatch::path("/inventory/*").expect("a glob")),
            via: rng.random_bool(0.3).then(|| "edge".to_string()),
            gap: rng.random_bool(0.5).then(|| ms(rng.random_range(50..800))),
            probes: rng.random_range(1..3),
            wait_in_open: rng
                .random_bool(0.5)
                .then(|| ms(rng.random_range(100..1_500))),
            reported: None,
        };
        breakers.insert(format!("b{b}"), breaker);
    }
    let system = SystemSpec {
        service: Service {
            at: "system".to_string(),
            endpoint: crate::http::endpoint::Endpoint::parse("system.url", "http://127.0.0.1:1")
                .expect("a url"),
            tls: Default::default(),
            client: None,
        },
        breakers,
        correlation: Vec::new(),
        correlation_declared: rng.random_bool(0.5),
    };
    let load = match rng.random_range(0..3) {
        0 => vec![],
        1 => vec![route("stock", 20.0), route("cart", 0.0)],
        _ => vec![route("stock", 0.0)],
    };
    Drill {
        system,
        load,
        requests,
        dependencies,
        duration,
    }
}

/// What [`breakers`] gives, in words (the error apart).
fn inferred(d: &Drill, requests: &dyn Replay<RequestRecord>, seen: &[Seen<'_>]) -> String {
    let (transitions, infos, failed) = breakers(&d.system, &d.load, requests, seen, d.duration);
    assert!(failed.is_none(), "{failed:?}");
    format!("{transitions:#?}\n{infos:#?}")
}

/// The drill's lists as given in memory.
fn from_vecs(d: &Drill) -> String {
    let seen: Vec<Seen<'_>> = d
        .dependencies
        .iter()
        .map(|(name, arrivals, records)| Seen {
            name,
            arrivals,
            records,
            lost: None,
        })
        .collect();
    inferred(d, &d.requests, &seen)
}

/// A request in a spill with its exact times (`RequestRecord` leaves them
/// out of its JSON), as a run keeps them.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct Kept {
    sent: Duration,
    latency: Option<Duration>,
    #[serde(flatten)]
    record: RequestRecord,
}

struct KeptRequests(Mutex<Spill<Kept>>);

impl Replay<RequestRecord> for KeptRequests {
    fn replay(&self, take: &mut dyn FnMut(RequestRecord)) {
        self.0.replay(&mut |k| {
            take(RequestRecord {
                sent: k.sent,
                latency: k.latency,
                ..k.record
            })
        });
    }
}

fn spilled<T: serde::Serialize + serde::de::DeserializeOwned + Clone>(
    items: &[T],
) -> Mutex<Spill<T>> {
    let mut spill = Spill::new();
    items.iter().for_each(|i| spill.push(i));
    Mutex::new(spill)
}

/// One dependency's arrivals and records on disk.
type Lists = (Mutex<Spill<Arrival>>, Mutex<Spill<Record>>);

/// The drill's lists as given on disk, sorted in runs of `run` items.
fn from_spills(d: &Drill, run: usize) -> String {
    let mut requests = Spill::new();
    for r in &d.requests {
        requests.push(&Kept {
            sent: r.sent,
            latency: r.latency,
            record: r.clone(),
        });
    }
    let requests = KeptRequests(Mutex::new(requests));
    let lists: Vec<Lists> = d
        .dependencies
        .iter()
        .map(|(_, arrivals, records)| (spilled(arrivals), spilled(records)))
        .collect();
    let seen: Vec<Seen<'_>> = d
        .dependencies
        .iter()
        .zip(&lists)
        .map(|((name, ..), (arrivals, records))| Seen {
            name,
            arrivals,
            records,
            lost: None,
        })
        .collect();
    TEST_RUN.with(|r| r.set(Some(run)));
    let out = inferred(d, &requests, &seen);
    TEST_RUN.with(|r| r.set(None));
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The lists in memory or on disk, sorted in one run or in many: the
    /// same transitions, reasons, counts, figures and contradictions.
    #[test]
    fn breakers_are_the_same_from_vecs_or_spills_sorted_in_many_runs(seed in any::<u64>(), run in 1usize..8) {
        let d = drill(seed);
        let expected = from_vecs(&d);
        prop_assert_eq!(&from_spills(&d, run), &expected);
        prop_assert_eq!(&from_spills(&d, 1 << 20), &expected);
    }
}
