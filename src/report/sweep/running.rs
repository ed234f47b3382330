//! The runs a sweep has going, and how far each has got in its simulated
//! time: what a sweep's heartbeat line says during a long point.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::clock::Duration;

/// The runs going on now, by their place in the sweep.
#[derive(Debug, Default)]
pub struct Running(Mutex<BTreeMap<usize, Going>>);

/// One run going on.
#[derive(Debug)]
struct Going {
    /// Its folder's name (`003-3s`, with `/seed-S` for several seeds):
    /// the point as the report directory names it.
    label: String,
    /// Its planned simulated length.
    total: Duration,
    /// Its simulated milliseconds so far, set by the run at each
    /// hundredth of it.
    reached: Arc<AtomicU64>,
}

impl Running {
    /// Run `job` (`label`, `total` long) starts: the counter it sets as
    /// its simulated time goes.
    pub(super) fn start(&self, job: usize, label: String, total: Duration) -> Arc<AtomicU64> {
        let reached = Arc::new(AtomicU64::new(0));
        self.lock().insert(
            job,
            Going {
                label,
                total,
                reached: reached.clone(),
            },
        );
        reached
    }

    /// Run `job` ended.
    pub(super) fn end(&self, job: usize) {
        self.lock().remove(&job);
    }

    /// `003-3s at 1h12m of 3h`, one per run going on, in the sweep's order.
    pub fn describe(&self) -> Vec<String> {
        self.lock()
            .values()
            .map(|g| {
                let reached = Duration::from_millis(g.reached.load(Ordering::Relaxed));
                format!("{} at {} of {}", g.label, span(reached), span(g.total))
            })
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<usize, Going>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// `3h`, `1h12m`, `12m30s`, `45s`: whole seconds, largest units first.
fn span(d: Duration) -> String {
    let s = d.as_secs();
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    let parts = [(h, "h"), (m, "m"), (s, "s")];
    let text: String = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, unit)| format!("{n}{unit}"))
        .collect();
    if text.is_empty() {
        "0s".to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_going_on_is_told_with_how_far_its_simulated_time_has_got() {
        let running = Running::default();
        let hours = |h: u64| Duration::from_secs(h * 3600);
        let second = running.start(1, "002-3s".to_string(), hours(3));
        let first = running.start(0, "001-1s".to_string(), hours(3));
        first.store(4_320_000, Ordering::Relaxed);
        second.store(45_000, Ordering::Relaxed);
        assert_eq!(
            running.describe(),
            ["001-1s at 1h12m of 3h", "002-3s at 45s of 3h"]
        );
        running.end(0);
        assert_eq!(running.describe(), ["002-3s at 45s of 3h"]);
        running.end(1);
        assert_eq!(running.describe(), Vec::<String>::new());
    }
}
