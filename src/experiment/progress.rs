//! The live progress bar of a real-time drill: elapsed of total, each
//! breaker's state, and per-route counts. Hidden when stderr is not a
//! terminal or with `--quiet`.

use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::config::Experiment;
use super::load::Load;
use crate::clock::{self, Duration, Instant};
use crate::defense::DefenseLine;

/// Updates a progress bar four times a second; never returns.
pub async fn show(
    enabled: bool,
    experiment: &Experiment,
    load: &Arc<Load>,
    line: Option<Arc<DefenseLine>>,
    start: Instant,
) {
    let target = if enabled {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    if target.is_hidden() {
        return std::future::pending().await;
    }
    let total = experiment.duration.as_millis() as u64;
    let bar = ProgressBar::with_draw_target(Some(total), target);
    bar.set_style(
        ProgressStyle::with_template("{prefix} [{bar:30}] {msg}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    bar.set_prefix(experiment.name.clone());
    loop {
        let elapsed = clock::now().saturating_duration_since(start);
        bar.set_position((elapsed.as_millis() as u64).min(total));
        let mut message = format!(
            "{:.0}s/{:.0}s",
            elapsed.as_secs_f64(),
            experiment.duration.as_secs_f64()
        );
        if let Some(line) = &line {
            for (name, breaker) in line.breakers() {
                message.push_str(&format!("  {name}: {}", breaker.state()));
            }
        }
        let counts: Vec<(usize, usize)> = load.with_records(|records| {
            experiment
                .load
                .iter()
                .map(|route| {
                    let mine = records.values().filter(|r| r.route == route.name);
                    mine.fold((0, 0), |(ok, sent), r| {
                        (ok + usize::from(r.succeeded()), sent + 1)
                    })
                })
                .collect()
        });
        for (route, (ok, sent)) in experiment.load.iter().zip(counts) {
            message.push_str(&format!("  {}: {ok}/{sent} ok", route.name));
        }
        bar.set_message(message);
        clock::sleep(Duration::from_millis(250)).await;
    }
}
