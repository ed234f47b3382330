//! The built-in target's instances as the run stands them up: one fixture
//! server and one fault proxy each, in memory under paused time.

use std::collections::BTreeMap;
use std::sync::Arc;

use http_body_util::BodyExt;

use super::super::{RunningDependency, Stood, stand_up};
use crate::clock::{self, Duration};
use crate::experiment::drill::network::MemoryNetwork;
use crate::experiment::drill::stand_up::entry::Entry;
use crate::experiment::file::Loaded;
use crate::http::client::Upstream;

/// Three instances: b's inventory fails with a fault of its own, c's
/// `/health` answers 200 with an error page; every instance shares the
/// inventory route.
const THREE_INSTANCES: &str = "
name: three instances
duration: 10s
target:
  builtin:
    routes:
      - { path: /inventory/*, latency: 20ms, body: \"stock\\n\" }
    instances:
      c:
        routes: [{ path: /health, body: \"error: database down\\n\" }]
      a: {}
      b: {}
load:
  - { name: stock, request: GET /inventory/1, rate: 10/s }
faults:
  - { name: b-down, instance: b, status: { code: 503 }, match: /inventory/* }
  - { name: everywhere-slow, latency: { delay: 100ms }, match: /slow }
";

/// `yaml` as a loaded experiment with no expectations, halts or steady
/// state.
fn loaded(yaml: &str) -> Loaded {
    Loaded {
        experiment: crate::schema::from_yaml_str("x.yaml", yaml).unwrap(),
        halts: Vec::new(),
        prom_halts: Vec::new(),
        expectations: Vec::new(),
        steady: None,
        remote: Default::default(),
    }
}

/// The run's target, stood up in memory.
async fn stood_up(loaded: &Loaded) -> Stood<'_> {
    stand_up(loaded, &MemoryNetwork::default(), Vec::new())
        .await
        .unwrap()
}

/// `GET path` through `upstream`: status, body and how long it took.
async fn get(upstream: &Arc<dyn Upstream>, path: &str) -> (u16, String, Duration) {
    let sent = clock::now();
    let request = http::Request::get(path)
        .body(crate::http::body::full(bytes::Bytes::new()))
        .unwrap();
    let response = upstream.send(request).await.unwrap();
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let took = clock::now().saturating_duration_since(sent);
    (status, String::from_utf8_lossy(&body).into_owned(), took)
}

/// Paths that reached each instance's proxy, by instance.
fn arrivals(dependencies: &[RunningDependency]) -> BTreeMap<String, Vec<String>> {
    dependencies
        .iter()
        .map(|d| {
            let name = d.instance.clone().unwrap_or_default();
            (
                name,
                d.plan.arrivals().into_iter().map(|a| a.path).collect(),
            )
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn each_instance_is_reached_by_name_and_the_entry_is_the_first_in_name_order() {
    let loaded = loaded(THREE_INSTANCES);
    let stood = stood_up(&loaded).await;
    let (dependencies, instances) = (&stood.dependencies, &stood.instances);
    let Entry::Http(entry) = &stood.client else {
        panic!("without a defense line the load goes to the target over HTTP");
    };
    let names: Vec<&str> = instances.keys().map(String::as_str).collect();
    assert_eq!(names, ["a", "b", "c"]);
    let tagged: Vec<Option<&str>> = dependencies.iter().map(|d| d.instance.as_deref()).collect();
    assert_eq!(tagged, [Some("a"), Some("b"), Some("c")]);
    assert!(dependencies.iter().all(|d| d.name == "target"));
    assert!(Arc::ptr_eq(entry, &instances["a"]));
    for name in ["a", "c", "c"] {
        get(&instances[name], "/inventory/7").await;
    }
    let seen = arrivals(dependencies);
    assert_eq!(seen["a"], ["/inventory/7"]);
    assert!(seen["b"].is_empty());
    assert_eq!(seen["c"], ["/inventory/7", "/inventory/7"]);
}

#[tokio::test(start_paused = true)]
async fn the_timeline_tags_each_hit_with_the_instance_that_received_it() {
    let loaded = loaded(THREE_INSTANCES);
    let stood = stood_up(&loaded).await;
    for name in ["c", "a", "b"] {
        get(&stood.instances[name], &format!("/inventory/{name}")).await;
    }
    let timeline = crate::experiment::drill::collect::timeline::timeline(
        &loaded.experiment,
        &stood,
        &BTreeMap::new(),
        Duration::from_secs(10),
        crate::spill::Spill::new(),
        crate::spill::Spill::new(),
    );
    let tagged: Vec<(&str, Option<&str>)> = timeline
        .target_hits
        .iter()
        .map(|h| (h.path.as_str(), h.instance.as_deref()))
        .collect();
    assert_eq!(
        tagged,
        [
            ("/inventory/c", Some("c")),
            ("/inventory/a", Some("a")),
            ("/inventory/b", Some("b")),
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_fault_naming_instance_b_fails_b_only_and_a_fault_naming_none_acts_on_every_instance() {
    let loaded = loaded(THREE_INSTANCES);
    let stood = stood_up(&loaded).await;
    let (dependencies, instances) = (&stood.dependencies, &stood.instances);
    for (name, status, body) in [("a", 200, "stock\n"), ("b", 503, ""), ("c", 200, "stock\n")] {
        let (got, text, took) = get(&instances[name], "/inventory/1").await;
        assert_eq!((got, text.as_str()), (status, body), "instance {name}");
        // The shared route's 20ms latency, unless the fault answered first.
        let expected = if status == 503 { 0 } else { 20 };
        assert_eq!(took, Duration::from_millis(expected), "instance {name}");
    }
    for name in ["a", "b", "c"] {
        let (_, _, took) = get(&instances[name], "/slow").await;
        assert_eq!(took, Duration::from_millis(100), "instance {name}");
    }
    let injected: BTreeMap<String, Vec<(String, u64)>> = dependencies
        .iter()
        .map(|d| {
            let name = d.instance.clone().unwrap_or_default();
            (name, d.plan.injected_by_name().into_iter().collect())
        })
        .collect();
    assert!(
        injected["b"].contains(&("b-down".to_string(), 1)),
        "{injected:?}"
    );
    for name in ["a", "c"] {
        assert!(
            injected[name].iter().all(|(fault, _)| fault != "b-down"),
            "{injected:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn every_instance_answers_health_200_ok_unless_its_routes_override_it() {
    let loaded = loaded(THREE_INSTANCES);
    let stood = stood_up(&loaded).await;
    let instances = &stood.instances;
    for (name, body) in [
        ("a", "ok\n"),
        ("b", "ok\n"),
        ("c", "error: database down\n"),
    ] {
        let (status, text, _) = get(&instances[name], "/health").await;
        assert_eq!((status, text.as_str()), (200, body), "instance {name}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_target_without_instances_runs_one_unnamed_proxy_and_names_no_instance() {
    let yaml = "
name: one target
duration: 10s
target:
  builtin:
    routes: [{ path: /inventory/*, latency: 20ms }]
load:
  - { name: stock, request: GET /inventory/1, rate: 10/s }
faults:
  - { name: down, status: { code: 503 }, match: /inventory/* }
";
    let loaded = loaded(yaml);
    let stood = stood_up(&loaded).await;
    assert!(stood.instances.is_empty());
    assert_eq!(stood.dependencies.len(), 1);
    assert_eq!(stood.dependencies[0].instance, None);
    let Entry::Http(entry) = &stood.client else {
        panic!("without a defense line the load goes to the target over HTTP");
    };
    let (status, _, _) = get(entry, "/inventory/1").await;
    assert_eq!(
        status, 503,
        "the fault without instance acts on the one proxy"
    );
}

/// Two instances and two manual faults: one naming instance b, one naming
/// none.
const MANUAL: &str = "
name: manual faults on instances
duration: 10s
target:
  builtin:
    instances: { a: {}, b: {} }
load:
  - { name: stock, request: GET /inventory/1, rate: 10/s }
faults:
  - { name: b-down, instance: b, at: manual, status: { code: 503 } }
  - { name: all-down, at: manual, status: { code: 502 } }
";

/// The status each instance answers `/inventory/1` with, in name order.
async fn statuses(instances: &BTreeMap<String, Arc<dyn Upstream>>) -> Vec<u16> {
    let mut out = Vec::new();
    for upstream in instances.values() {
        out.push(get(upstream, "/inventory/1").await.0);
    }
    out
}

#[tokio::test(start_paused = true)]
async fn a_manual_fault_starts_and_stops_on_its_instance_only_or_on_every_instance() {
    let loaded = loaded(MANUAL);
    let stood = stood_up(&loaded).await;
    let instances = &stood.instances;
    let control = crate::experiment::drill::drive::control::Control::new(
        &loaded.experiment,
        &stood.dependencies,
        clock::now(),
    );
    assert_eq!(statuses(instances).await, [200, 200], "manual faults wait");
    control.start_fault("b-down").unwrap();
    assert_eq!(statuses(instances).await, [200, 503]);
    control.stop_fault("b-down").unwrap();
    control.start_fault("all-down").unwrap();
    assert_eq!(statuses(instances).await, [502, 502]);
    control.stop_fault("all-down").unwrap();
    assert_eq!(statuses(instances).await, [200, 200]);
}

/// The response's HTTP version for `GET path` through `upstream`.
async fn version_through(upstream: &Arc<dyn Upstream>, path: &str) -> http::Version {
    let request = http::Request::get(path)
        .body(crate::http::body::full(bytes::Bytes::new()))
        .unwrap();
    let response = upstream.send(request).await.unwrap();
    assert_eq!(response.status(), 200);
    response.version()
}

#[tokio::test(start_paused = true)]
async fn a_drill_with_http2_speaks_http2_to_its_own_hops_and_http1_without() {
    for (setting, expected) in [
        ("http2: true\n", http::Version::HTTP_2),
        ("http2: false\n", http::Version::HTTP_11),
        ("", http::Version::HTTP_11),
    ] {
        let yaml = format!(
            "name: h2\nduration: 10s\n{setting}load:\n  - {{ name: stock, request: GET /inventory/1, rate: 10/s }}\n"
        );
        let loaded = loaded(&yaml);
        let stood = stood_up(&loaded).await;
        let Entry::Http(entry) = &stood.client else {
            panic!("without a defense line the load goes to the target over HTTP");
        };
        assert_eq!(
            version_through(entry, "/health").await,
            expected,
            "{setting:?}"
        );
    }
}

#[test]
fn a_drill_whose_load_makes_grpc_calls_speaks_http2_unless_told_otherwise() {
    let grpc = "name: g\nduration: 10s\nload:\n  - { name: get, request: grpc /inventory.Inventory/Get, rate: 10/s }\n";
    assert!(loaded(grpc).experiment.http2);
    let told = format!("{grpc}http2: false\n");
    assert!(!loaded(&told).experiment.http2);
}
