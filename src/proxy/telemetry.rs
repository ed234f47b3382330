//! What a proxy counts and records while it serves ([`Telemetry`]), and
//! how /metrics shows it ([`ProxyMetrics`]): the proxy's modes take the
//! first, `firedrill proxy --metrics-listen` and `firedrill server` serve
//! the second.

use std::sync::Arc;

use super::record::Recorder;
use super::traffic::Traffic;
use crate::metrics::{Exposition, MetricSource};

/// What a proxy counts and records while it serves.
#[derive(Debug, Clone, Default)]
pub struct Telemetry {
    /// Bytes per direction, both modes.
    pub traffic: Arc<Traffic>,
    /// Requests (HTTP mode): counters, and records when a sink is attached.
    pub recorder: Recorder,
}

/// What /metrics shows of one proxy: Toxiproxy's byte counters and
/// `firedrill_proxy_http_requests_total`.
#[derive(Debug, Clone)]
pub struct ProxyMetrics {
    /// The proxy's name.
    pub name: String,
    /// Its listen address.
    pub listen: String,
    /// Its upstream.
    pub upstream: String,
    /// Its counters.
    pub telemetry: Telemetry,
}

impl MetricSource for ProxyMetrics {
    fn collect(&self, out: &mut Exposition) {
        let t = &self.telemetry;
        t.traffic
            .expose(&self.name, &self.listen, &self.upstream, out);
        if let Some(requests) = t.recorder.counters() {
            requests.collect(out);
        }
    }
}
