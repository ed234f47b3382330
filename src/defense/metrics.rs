//! The defense line's Prometheus series, under resilience4j's names so that
//! existing dashboards work: breaker state, calls by kind, calls not
//! permitted, failure rate; bulkhead available and maximum calls; and, in
//! firedrill's own names, each pool server's health, requests and calls in
//! flight.

use super::line::DefenseLine;
use crate::defense::breaker::State;
use crate::metrics::{Exposition, MetricKind, MetricSource};

impl MetricSource for DefenseLine {
    fn collect(&self, out: &mut Exposition) {
        for (name, breaker) in self.breakers() {
            let (state, counters, failure_rate) = {
                let machine = breaker.lock();
                (
                    machine.state(),
                    machine.counters().clone(),
                    machine.failure_rate(),
                )
            };
            for s in State::ALL {
                out.sample(
                    "resilience4j_circuitbreaker_state",
                    "The states of the circuit breaker (1 for the current one)",
                    MetricKind::Gauge,
                    &[("name", name), ("state", s.as_str())],
                    if s == state { 1.0 } else { 0.0 },
                );
            }
            for (kind, count, seconds) in [
                ("successful", counters.successes, counters.success_seconds),
                ("failed", counters.failures, counters.failure_seconds),
                ("ignored", counters.ignored, counters.ignored_seconds),
            ] {
                out.summary(
                    "resilience4j_circuitbreaker_calls_seconds",
                    "Total number of calls which were recorded, by kind",
                    &[("kind", kind), ("name", name)],
                    count as f64,
                    seconds,
                );
            }
            let rejected = State::ALL
                .iter()
                .map(|s| counters.rejected.get(*s))
                .sum::<u64>();
            out.sample(
                "resilience4j_circuitbreaker_not_permitted_calls_total",
                "Total number of calls which were not permitted",
                MetricKind::Counter,
                &[("kind", "not_permitted"), ("name", name)],
                rejected as f64,
            );
            out.sample(
                "firedrill_circuitbreaker_cancelled_calls_total",
                "Calls released without an outcome: the caller gave up first (failures with count_cancelled)",
                MetricKind::Counter,
                &[("name", name)],
                counters.cancelled as f64,
            );
            out.sample(
                "resilience4j_circuitbreaker_failure_rate",
                "The failure rate of the circuit breaker (-1 until the window can decide)",
                MetricKind::Gauge,
                &[("name", name)],
                failure_rate.unwrap_or(-1.0),
            );
        }
        for pool in self.pools() {
            let healthy = pool.healthy();
            for (server, up) in pool.servers().iter().zip(healthy) {
                let labels = [("pool", pool.name()), ("server", server.name.as_str())];
                out.sample(
                    "firedrill_pool_server_healthy",
                    "Whether the pool server is in rotation (1) or out (0)",
                    MetricKind::Gauge,
                    &labels,
                    if up { 1.0 } else { 0.0 },
                );
                out.sample(
                    "firedrill_pool_server_requests_total",
                    "Attempts sent to the pool server",
                    MetricKind::Counter,
                    &labels,
                    server.requests() as f64,
                );
                out.sample(
                    "firedrill_pool_server_in_flight",
                    "Attempts in flight on the pool server",
                    MetricKind::Gauge,
                    &labels,
                    server.in_flight() as f64,
                );
            }
        }
        for (name, bulkhead) in self.bulkheads() {
            out.sample(
                "resilience4j_bulkhead_available_concurrent_calls",
                "The number of available permissions",
                MetricKind::Gauge,
                &[("name", name)],
                f64::from(bulkhead.available()),
            );
            out.sample(
                "resilience4j_bulkhead_max_allowed_concurrent_calls",
                "The maximum number of available permissions",
                MetricKind::Gauge,
                &[("name", name)],
                f64::from(bulkhead.max_concurrent()),
            );
        }
    }
}
