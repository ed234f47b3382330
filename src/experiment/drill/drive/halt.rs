//! The halt watch: every second, each halt condition over the finished
//! requests of its window; the first that holds ends the drill.

use std::sync::Arc;

use super::load::Load;
use crate::clock::{self, Duration, Instant};
use crate::experiment::config::halt::HaltCondition;
use crate::experiment::expect::ast::{Bound, Op, Value};
use crate::experiment::expect::verdict::percent_against;
use crate::experiment::timeline::RequestRecord;
use crate::schema::units::Dur;

/// Resolves with (condition, what it saw) when a halt condition holds;
/// never resolves when there are none.
pub async fn watch(halts: &[HaltCondition], load: &Arc<Load>, start: Instant) -> (String, String) {
    if halts.is_empty() {
        return std::future::pending().await;
    }
    let mut tick = Duration::from_secs(1);
    loop {
        clock::sleep_until(start + tick).await;
        let records: Vec<RequestRecord> = load.stream().with_finished(|r| r.collect());
        let held = halts.iter().find_map(|h| {
            if tick < h.window {
                return None;
            }
            let (share, n) = h.share(&records, tick)?;
            let holds = if h.below {
                share < h.threshold.percent()
            } else {
                share > h.threshold.percent()
            };
            holds.then_some((h, share, n))
        });
        if let Some((h, share, n)) = held {
            // The digits that decide: 49.96% under `< 50%` is not "50.0%".
            let op = if h.below { Op::Lt } else { Op::Gt };
            let bound = Bound::Cmp(op, Value::Percent(h.threshold.percent()));
            let seen = format!(
                "route {} {} over {} requests in the {} before {}",
                h.route,
                percent_against(share, bound),
                n,
                Dur(h.window),
                Dur(tick)
            );
            return (h.text.clone(), seen);
        }
        tick += Duration::from_secs(1);
    }
}
