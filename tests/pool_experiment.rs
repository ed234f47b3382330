//! A pool in an experiment's defense line, in virtual time: its servers are
//! listed in the timeline, its health checks run on the run's clock (a
//! fault on `/health` ejects and returns the servers at the check times)
//! and a second run with the same seed replays the same health changes.

use firedrill::experiment::config::ClockKind;
use firedrill::experiment::drill::Live;
use firedrill::experiment::timeline::PoolInfo;

/// Both servers are `address:` servers, which a drill reaches through its
/// fault proxy, so the fault on `/health` fails the checks of both.
const EXPERIMENT: &str = "
name: pool health on the run's clock
seed: 5
duration: 30s
target:
  builtin:
    routes:
      - { path: /catalogue/*, latency: 10ms }
defense:
  routes:
    catalogue: { match: /catalogue/*, pool: catalogue }
  pools:
    catalogue:
      servers:
        - { address: 'one:80', name: one }
        - { address: 'spare:80', name: spare, backup: true }
      health_check: { interval: 2s, fails: 2, passes: 1 }
load:
  - { name: catalogue, request: GET /catalogue/1, rate: 10/s }
faults:
  - { name: health-down, match: /health, status: { code: 503 }, at: 10s, for: 10s }
expect:
  - route catalogue requests >= 1
";

/// One health change: (ms from the start, server, healthy, by).
type Change = (u128, String, bool, String);

/// The pools and health changes of one virtual run.
fn health_of_one_run() -> (Vec<PoolInfo>, Vec<Change>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("pool.yaml");
    std::fs::write(&file, EXPERIMENT).unwrap();
    let loaded = firedrill::experiment::file::load(&file).unwrap();
    let (result, _) = firedrill::report::execute(
        &loaded,
        ClockKind::Virtual,
        std::future::pending(),
        Live::default(),
    )
    .unwrap();
    let health = result
        .timeline
        .health
        .iter()
        .map(|h| (h.at.as_millis(), h.server.clone(), h.healthy, h.by.clone()))
        .collect();
    (result.timeline.pools, health)
}

#[test]
fn pool_checks_eject_and_return_servers_at_check_times_of_the_virtual_clock() {
    let (pools, health) = health_of_one_run();
    assert_eq!(
        pools,
        [PoolInfo {
            name: "catalogue".into(),
            servers: vec![("one".into(), false), ("spare".into(), true)],
            starts_out: true,
            slow_start: firedrill::clock::Duration::ZERO,
        }]
    );
    let summary: Vec<(u128, &str, bool)> = health
        .iter()
        .map(|(at, server, healthy, _)| (*at, server.as_str(), *healthy))
        .collect();
    // Checks at 0, 2, 4, ... s: in at 0; the checks at 10 and 12 s fail
    // (out at 12 s, the 2nd in a row); the check at 20 s passes.
    assert_eq!(
        summary,
        [
            (0, "one", true),
            (0, "spare", true),
            (12_000, "one", false),
            (12_000, "spare", false),
            (20_000, "one", true),
            (20_000, "spare", true),
        ]
    );
    assert_eq!(
        health[2].3,
        "active check GET /health: status 503 (2nd failure in a row)"
    );
}

#[test]
fn the_same_seed_replays_the_same_health_changes() {
    assert_eq!(health_of_one_run(), health_of_one_run());
}
