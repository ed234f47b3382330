//! The task that runs a breaker's timed transitions when no call comes to
//! run them.

use super::DefenseLine;
use crate::clock;

/// Runs a breaker's timed transitions (automatic half-open, max wait in
/// half-open, progressive stage deadlines) when no call comes to run them.
pub(super) async fn breaker_timers(line: std::sync::Weak<DefenseLine>, index: usize) {
    loop {
        let (next, stepped) = {
            let Some(line) = line.upgrade() else { return };
            let route = &line.routes[index];
            let breaker = route.breaker.as_ref().expect("spawned for a breaker");
            let next = breaker.lock().next_timer();
            (next, route.breaker_stepped.clone())
        };
        if !clock::deadline_or_wake(next, &stepped).await {
            continue;
        }
        let Some(line) = line.upgrade() else { return };
        let route = &line.routes[index];
        if let Some(b) = &route.breaker {
            b.lock().on_timer(clock::now());
            route.stepped(&line);
        }
    }
}
