//! Requests through one HTTP-mode proxy, counted by the class of the status
//! returned to the client and the fault that decided the answer:
//! `firedrill_proxy_http_requests_total{proxy,status_class,fault}`; gRPC
//! answers also by their status:
//! `firedrill_proxy_grpc_responses_total{proxy,grpc_status}`.
//!
//! The label sets stay bounded: five status classes (plus `1xx`, which a
//! proxied HTTP/1.1 response practically never has) and the fault names of
//! the configuration, up to [`MAX_FAULT_NAMES`]; names beyond that (a
//! control plane that keeps adding toxics under new names) count under
//! `other`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use crate::metrics::{Exposition, MetricKind, MetricSource};

/// How many distinct fault names get a label of their own.
pub const MAX_FAULT_NAMES: usize = 64;

/// The `status_class` label values, by slot.
const CLASSES: [&str; 6] = ["1xx", "2xx", "3xx", "4xx", "5xx", "none"];

/// The metric's name.
const NAME: &str = "firedrill_proxy_http_requests_total";

/// The metric's help text.
const HELP: &str = "HTTP requests through the proxy, by the class of the status returned to the client (none: cut, reset or blackholed) and the fault that decided the answer";

/// The gRPC metric's name.
const GRPC_NAME: &str = "firedrill_proxy_grpc_responses_total";

/// The gRPC metric's help text.
const GRPC_HELP: &str =
    "gRPC answers through the proxy, by the grpc-status of their head (trailers-only) or trailers";

/// One counter per status class.
type ByClass = [AtomicU64; CLASSES.len()];

/// The requests of one proxy, by status class and deciding fault.
#[derive(Debug)]
pub struct RequestCounters {
    /// The proxy's name (the `proxy` label).
    proxy: Arc<str>,
    /// Requests no fault decided (`fault="none"`): the fast path, no lock.
    clean: ByClass,
    /// Per fault name, in the order first seen; at most
    /// [`MAX_FAULT_NAMES`] plus `other`.
    faulted: RwLock<Vec<(Box<str>, ByClass)>>,
    /// gRPC answers per status code, 0 (OK) to 16.
    grpc: [AtomicU64; 17],
}

/// The slot of `status` in [`CLASSES`].
fn class(status: Option<u16>) -> usize {
    match status {
        None => 5,
        Some(s) => usize::from((s / 100).clamp(1, 5) - 1),
    }
}

impl RequestCounters {
    /// No requests yet, for the proxy named `proxy`.
    pub fn new(proxy: &str) -> RequestCounters {
        RequestCounters {
            proxy: Arc::from(proxy),
            clean: Default::default(),
            faulted: RwLock::new(Vec::new()),
            grpc: Default::default(),
        }
    }

    /// Counts one gRPC answer with status `code` (past 16: as UNKNOWN, 2).
    pub fn count_grpc(&self, code: u8) {
        let slot = if code <= 16 { code } else { 2 };
        self.grpc[usize::from(slot)].fetch_add(1, Ordering::Relaxed);
    }

    /// How many gRPC answers had status `code`.
    pub fn grpc(&self, code: u8) -> u64 {
        self.grpc
            .get(usize::from(code))
            .map_or(0, |c| c.load(Ordering::Relaxed))
    }

    /// The proxy's name.
    pub fn proxy(&self) -> &Arc<str> {
        &self.proxy
    }

    /// Counts one request answered with `status` (`None`: no response),
    /// decided by the fault named `fault`.
    pub fn count(&self, status: Option<u16>, fault: Option<&str>) {
        let slot = class(status);
        let Some(name) = fault else {
            self.clean[slot].fetch_add(1, Ordering::Relaxed);
            return;
        };
        {
            let faulted = self.faulted.read().unwrap_or_else(|e| e.into_inner());
            if let Some((_, counts)) = faulted.iter().find(|(n, _)| **n == *name) {
                counts[slot].fetch_add(1, Ordering::Relaxed);
                return;
            }
        }
        let mut faulted = self.faulted.write().unwrap_or_else(|e| e.into_inner());
        let name = if faulted.len() < MAX_FAULT_NAMES {
            name
        } else {
            "other"
        };
        let index = match faulted.iter().position(|(n, _)| **n == *name) {
            Some(i) => i,
            None => {
                faulted.push((name.into(), Default::default()));
                faulted.len() - 1
            }
        };
        faulted[index].1[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// How many requests were answered in `status_class` (`2xx`, ...,
    /// `none`) with `fault` deciding (`None`: no fault).
    pub fn get(&self, status_class: &str, fault: Option<&str>) -> u64 {
        let Some(slot) = CLASSES.iter().position(|c| *c == status_class) else {
            return 0;
        };
        match fault {
            None => self.clean[slot].load(Ordering::Relaxed),
            Some(name) => self
                .faulted
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .find(|(n, _)| **n == *name)
                .map_or(0, |(_, c)| c[slot].load(Ordering::Relaxed)),
        }
    }
}

impl MetricSource for RequestCounters {
    /// Every label set that counted a request (none before the first).
    fn collect(&self, out: &mut Exposition) {
        let mut add = |fault: &str, counts: &ByClass| {
            for (class, count) in CLASSES.iter().zip(counts) {
                let n = count.load(Ordering::Relaxed);
                if n > 0 {
                    let labels = [
                        ("proxy", &*self.proxy),
                        ("status_class", class),
                        ("fault", fault),
                    ];
                    out.sample(NAME, HELP, MetricKind::Counter, &labels, n as f64);
                }
            }
        };
        add("none", &self.clean);
        for (name, counts) in self
            .faulted
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            add(name, counts);
        }
        for (code, count) in (0u8..).zip(&self.grpc) {
            let n = count.load(Ordering::Relaxed);
            if n > 0 {
                let status = crate::schema::units::grpc_status_name(code);
                let labels = [("proxy", &*self.proxy), ("grpc_status", status)];
                out.sample(GRPC_NAME, GRPC_HELP, MetricKind::Counter, &labels, n as f64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_fall_into_their_class_and_no_response_into_none() {
        let c = RequestCounters::new("p");
        for s in [Some(200), Some(204), Some(302), Some(404), Some(503), None] {
            c.count(s, None);
        }
        let got: Vec<u64> = ["2xx", "3xx", "4xx", "5xx", "none"]
            .iter()
            .map(|k| c.get(k, None))
            .collect();
        assert_eq!(got, [2, 1, 1, 1, 1]);
    }

    #[test]
    fn fault_names_beyond_the_cap_count_under_other() {
        let c = RequestCounters::new("p");
        for i in 0..MAX_FAULT_NAMES + 3 {
            c.count(Some(503), Some(&format!("f{i}")));
        }
        c.count(Some(503), Some("f0"));
        assert_eq!(c.get("5xx", Some("f0")), 2);
        assert_eq!(c.get("5xx", Some("other")), 3);
        assert_eq!(c.faulted.read().unwrap().len(), MAX_FAULT_NAMES + 1);
    }

    #[test]
    fn only_label_sets_that_counted_are_exposed() {
        let c = RequestCounters::new("api");
        c.count(Some(200), None);
        c.count(None, Some("hole"));
        let mut out = Exposition::default();
        c.collect(&mut out);
        let text = out.render();
        assert!(text.contains(
            "firedrill_proxy_http_requests_total{proxy=\"api\",status_class=\"2xx\",fault=\"none\"} 1\n"
        ));
        assert!(text.contains(
            "firedrill_proxy_http_requests_total{proxy=\"api\",status_class=\"none\",fault=\"hole\"} 1\n"
        ));
        assert_eq!(
            text.matches("firedrill_proxy_http_requests_total{").count(),
            2
        );
    }
}
