//! Seed invariance: a verdict on a user's own service must not depend on
//! the drill's seed (its request ids, its draws from a replayed recording),
//! only on the service. Each real-clock story here runs the correct system
//! under every seed of `SEEDS` and the broken ones (a breaker leaking calls
//! while open, no breaker at all) under the same seeds, the seeds of one
//! system side by side: every correct run passes with its inferred journal
//! a path of the state machine and the service's own sequence of events;
//! every broken run fails, on the verdict that names what is broken.
//!
//! The stories: one host (`experiments/blackbox/handwritten.yaml` against
//! the hand-written breaker), gRPC (`experiments/blackbox/grpc_pybreaker.yaml`
//! against the grpcio shop's pybreaker), and a replayed incident
//! (`fixtures/blackbox/replayed-incident.yaml`: the hand-written service in
//! front of a dependency that answers as the recorded outage
//! `fixtures/incidents/inventory-2026-12-01.log` did). Across hosts is in
//! tests/agents.rs, Locust in tests/locust.rs. Loopback only; each drill
//! is bounded (7 s).

mod blackbox_support;
mod port_support;

use std::path::{Path, PathBuf};

use blackbox_support::services::{
    Ran, black_box_run, events_file, experiment, fails_as_without_a_breaker,
    fails_the_counter_proof_naming_a_leak, grpc_pybreaker, handwritten, handwritten_with, root,
};
use blackbox_support::{Service, passed_paired_by_id, report_sequence, under_seeds};

/// A real-clock story: its experiment and the edits that fit it to the
/// test (a shorter drill, the recording's absolute path).
struct Story {
    /// Named in every assertion, with the seed.
    name: &'static str,
    /// The experiment, its seed written `seed: 11`.
    file: PathBuf,
    /// Each `(from, to)` replaced in the experiment before the seed.
    edits: Vec<(&'static str, String)>,
}

/// The experiments under experiments/blackbox/ run 10 s; the story has
/// ended by 6 s (the breaker closed after its probe), so 7 s keep 1 s of
/// the healthy dependency after it.
const SHORTER: (&str, &str) = ("duration: 10s", "duration: 7s");

fn one_host() -> Story {
    Story {
        name: "one host",
        file: experiment("handwritten"),
        edits: vec![(SHORTER.0, SHORTER.1.to_string())],
    }
}

fn grpc() -> Story {
    Story {
        name: "gRPC",
        file: experiment("grpc_pybreaker"),
        edits: vec![(SHORTER.0, SHORTER.1.to_string())],
    }
}

fn replayed_incident() -> Story {
    // The drill runs a copy of the experiment elsewhere: the recording is
    // named by its absolute path.
    let incidents = root().join("fixtures/incidents");
    Story {
        name: "replayed incident",
        file: root().join("fixtures/blackbox/replayed-incident.yaml"),
        edits: vec![(
            "file: ../incidents/",
            format!("file: {}/", incidents.display()),
        )],
    }
}

/// The expectations of a report that did not hold, in its order.
fn not_held(report: &serde_json::Value) -> Vec<&str> {
    report["verdicts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["passed"] != true)
        .map(|v| v["expectation"].as_str().unwrap_or_default())
        .collect()
}

impl Story {
    /// The story against the service `start` starts (the dependency
    /// proxy's port, the events file), under each seed of `SEEDS`, side by
    /// side: each run with its seed, checked to be the report's, and the
    /// same expectations not held under every seed.
    fn under_every_seed(&self, start: impl Fn(u16, &Path) -> Service + Sync) -> Vec<(u64, Ran)> {
        let runs = under_seeds(|seed| {
            let mut edits = self.edits.clone();
            edits.push(("seed: 11", format!("seed: {seed}")));
            black_box_run(&self.file, &start, events_file, &edits)
        });
        let not_held: Vec<(u64, Vec<&str>)> = runs
            .iter()
            .map(|(seed, ran)| {
                assert_eq!(
                    ran.drill.report["seed"], *seed,
                    "{}, seed {seed}: {}",
                    self.name, ran.drill.output
                );
                (*seed, not_held(&ran.drill.report))
            })
            .collect();
        // The same expectations fail under every seed (none, for a correct
        // system).
        for (seed, failed) in &not_held {
            assert_eq!(
                failed, &not_held[0].1,
                "{}: seed {seed} vs seed {}",
                self.name, not_held[0].0
            );
        }
        runs
    }

    /// Every run passed (exit 0: no expectation failed, none
    /// inconclusive), its breaker read from calls at least 95% of which
    /// carried the id of a request of the drill, into a journal that is a
    /// path of the state machine and the service's own sequence of events.
    fn passes_under_every_seed(&self, start: impl Fn(u16, &Path) -> Service + Sync) {
        for (seed, ran) in self.under_every_seed(start) {
            passed_paired_by_id(seed, &ran.drill, &["inventory"]);
            let own: Vec<String> = ran
                .events
                .iter()
                .map(|(_, from, to)| format!("{from} -> {to}"))
                .collect();
            assert_eq!(
                report_sequence(&ran.drill.report, "inventory"),
                own,
                "{}, seed {seed}: inferred vs the service's own events",
                self.name
            );
        }
    }

    /// Every run against a breaker leaking every 5th call while open
    /// failed the counter proof, naming a leaked call.
    fn leaking_fails_under_every_seed(&self) {
        let leaky =
            |port: u16, events: &Path| handwritten_with(port, events, &[("LEAK_EVERY", "5")]);
        for (seed, ran) in self.under_every_seed(leaky) {
            fails_the_counter_proof_naming_a_leak(&format!("{}, seed {seed}", self.name), &ran);
        }
    }

    /// Every run against the service without its breaker failed: nothing
    /// opened, the sequence, the opening and the fallback while open failed.
    fn without_a_breaker_fails_under_every_seed(&self, start: fn(u16, &Path, bool) -> Service) {
        let bare = |port: u16, events: &Path| start(port, events, false);
        for (seed, ran) in self.under_every_seed(bare) {
            let label = format!("{}, seed {seed}", self.name);
            fails_as_without_a_breaker(&label, &ran.drill, &ran.events);
        }
    }
}

#[test]
fn one_host_a_correct_breaker_passes_under_every_seed() {
    one_host().passes_under_every_seed(|port, events| handwritten(port, events, true));
}

#[test]
fn one_host_a_breaker_leaking_while_open_fails_the_counter_proof_under_every_seed() {
    one_host().leaking_fails_under_every_seed();
}

#[test]
fn one_host_a_service_without_its_breaker_fails_under_every_seed() {
    one_host().without_a_breaker_fails_under_every_seed(handwritten);
}

#[test]
fn grpc_a_correct_pybreaker_passes_under_every_seed() {
    grpc().passes_under_every_seed(|port, events| grpc_pybreaker(port, events, true));
}

#[test]
fn grpc_a_service_without_its_breaker_fails_under_every_seed() {
    grpc().without_a_breaker_fails_under_every_seed(grpc_pybreaker);
}

#[test]
fn a_replayed_incident_opens_and_closes_a_correct_breaker_under_every_seed() {
    replayed_incident().passes_under_every_seed(|port, events| handwritten(port, events, true));
}

#[test]
fn a_replayed_incident_fails_a_breaker_leaking_while_open_under_every_seed() {
    replayed_incident().leaking_fails_under_every_seed();
}

#[test]
fn a_replayed_incident_fails_a_service_without_its_breaker_under_every_seed() {
    replayed_incident().without_a_breaker_fails_under_every_seed(handwritten);
}
