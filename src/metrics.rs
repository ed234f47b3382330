//! Prometheus text exposition: families with HELP and TYPE, label values
//! escaped, a stable order. Sources register by implementing
//! [`MetricSource`]: the control plane's proxies (Toxiproxy's byte counters)
//! and defense lines (resilience4j's breaker and bulkhead names).

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::{Arc, RwLock};

/// A family's type line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Only goes up.
    Counter,
    /// Goes up and down.
    Gauge,
    /// Observations: written as `NAME_count` and `NAME_sum` samples.
    Summary,
}

/// One family being written: its help, type and samples.
#[derive(Debug)]
struct Family {
    /// HELP text.
    help: String,
    /// TYPE.
    kind: MetricKind,
    /// Rendered label sets with their values, in the order added.
    samples: Vec<(&'static str, String, f64)>,
}

/// The text of one scrape, built family by family.
#[derive(Debug, Default)]
pub struct Exposition {
    /// By metric name, so the output order is stable.
    families: BTreeMap<String, Family>,
}

/// Escapes a label value (backslash, quote, newline).
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Exposition {
    /// Adds one sample of `name` with `labels` (in the order given).
    pub fn sample(
        &mut self,
        name: &str,
        help: &str,
        kind: MetricKind,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        self.suffixed(name, "", help, kind, labels, value);
    }

    /// Adds a summary's count and sum for `labels`.
    pub fn summary(
        &mut self,
        name: &str,
        help: &str,
        labels: &[(&str, &str)],
        count: f64,
        sum: f64,
    ) {
        self.suffixed(name, "_count", help, MetricKind::Summary, labels, count);
        self.suffixed(name, "_sum", help, MetricKind::Summary, labels, sum);
    }

    fn suffixed(
        &mut self,
        name: &str,
        suffix: &'static str,
        help: &str,
        kind: MetricKind,
        labels: &[(&str, &str)],
        value: f64,
    ) {
        let family = self
            .families
            .entry(name.to_string())
            .or_insert_with(|| Family {
                help: help.to_string(),
                kind,
                samples: Vec::new(),
            });
        let labels = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect::<Vec<_>>()
            .join(",");
        family.samples.push((suffix, labels, value));
    }

    /// The Prometheus text format, version 0.0.4.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, f) in &self.families {
            let kind = match f.kind {
                MetricKind::Counter => "counter",
                MetricKind::Gauge => "gauge",
                MetricKind::Summary => "summary",
            };
            let _ = writeln!(out, "# HELP {name} {}", f.help);
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (suffix, labels, value) in &f.samples {
                if labels.is_empty() {
                    let _ = writeln!(out, "{name}{suffix} {value}");
                } else {
                    let _ = writeln!(out, "{name}{suffix}{{{labels}}} {value}");
                }
            }
        }
        out
    }
}

/// Something that contributes samples to every scrape (a breaker, a
/// bulkhead, a run's counters).
pub trait MetricSource: Send + Sync + std::fmt::Debug {
    /// Adds this source's current samples.
    fn collect(&self, out: &mut Exposition);
}

/// The sources registered with a server.
#[derive(Debug, Default)]
pub struct MetricsRegistry {
    /// In registration order.
    sources: RwLock<Vec<Arc<dyn MetricSource>>>,
}

impl MetricsRegistry {
    /// Adds a source to every later scrape.
    pub fn register(&self, source: Arc<dyn MetricSource>) {
        self.sources
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .push(source);
    }

    /// Collects every registered source into `out`.
    pub fn collect(&self, out: &mut Exposition) {
        for s in self
            .sources
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            s.collect(out);
        }
    }
}

/// Serves `GET /metrics` from `registry` on `acceptor` until `shutdown`
/// (for `firedrill defend --metrics-listen` and real-time runs).
pub async fn serve<A: crate::net::Acceptor>(
    acceptor: A,
    registry: Arc<MetricsRegistry>,
    shutdown: crate::http::ShutdownSignal,
) -> std::io::Result<()> {
    let answer = move |req: http::Request<hyper::body::Incoming>| {
        let registry = registry.clone();
        async move {
            if req.uri().path() != "/metrics" {
                let mut resp = http::Response::new(crate::http::body::full("see /metrics\n"));
                *resp.status_mut() = http::StatusCode::NOT_FOUND;
                return resp;
            }
            let mut out = Exposition::default();
            registry.collect(&mut out);
            let mut resp = http::Response::new(crate::http::body::full(out.render()));
            resp.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; version=0.0.4"),
            );
            resp
        }
    };
    crate::http::serve_answers(acceptor, answer, shutdown).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_render_once_with_help_type_and_escaped_labels_in_name_order() {
        let mut e = Exposition::default();
        e.sample(
            "b_total",
            "B.",
            MetricKind::Counter,
            &[("x", "a\"b\\c\nd")],
            2.0,
        );
        e.sample("a", "A.", MetricKind::Gauge, &[], 1.5);
        e.sample("b_total", "B.", MetricKind::Counter, &[("x", "y")], 3.0);
        assert_eq!(
            e.render(),
            "# HELP a A.\n# TYPE a gauge\na 1.5\n# HELP b_total B.\n# TYPE b_total counter\nb_total{x=\"a\\\"b\\\\c\\nd\"} 2\nb_total{x=\"y\"} 3\n"
        );
    }

    #[derive(Debug)]
    struct Fixed;
    impl MetricSource for Fixed {
        fn collect(&self, out: &mut Exposition) {
            out.sample(
                "resilience4j_circuitbreaker_state",
                "State.",
                MetricKind::Gauge,
                &[("name", "inv"), ("state", "open")],
                1.0,
            );
        }
    }

    #[test]
    fn a_registered_source_appears_in_every_scrape() {
        let r = MetricsRegistry::default();
        r.register(Arc::new(Fixed));
        let mut e = Exposition::default();
        r.collect(&mut e);
        assert!(
            e.render()
                .contains("resilience4j_circuitbreaker_state{name=\"inv\",state=\"open\"} 1\n")
        );
    }
}
