//! An experiment's checks across fields that stand alone, each reporting
//! every problem it finds (the ones that build on each other are in
//! `build`).

use super::MAX_DURATION;
use super::load::LoadSection;
use super::raw::RawExperiment;
use crate::clock::Duration;
use crate::fault::MAX_FAULTS;
use crate::fault::window::MAX_RUN_WINDOWS;
use crate::schema::units::Dur;

/// The problems each found on its own: an empty name, a duration out of
/// bounds, too many faults, faults that start after the run, names used
/// twice, phases that end before they start.
pub(super) fn standalone_problems(raw: &RawExperiment) -> Vec<String> {
    let mut problems = Vec::new();
    if raw.name.trim().is_empty() {
        problems.push("name: an experiment needs a name".to_string());
    }
    let duration = raw.duration.get();
    if duration.is_zero() {
        problems.push("duration: must be longer than 0s".to_string());
    } else if duration > MAX_DURATION {
        problems.push(format!(
            "duration: `{}` is too long: expected at most 24h ({})",
            raw.duration,
            Dur(MAX_DURATION)
        ));
    } else {
        for (i, f) in raw.faults.iter().enumerate() {
            if f.window.start >= duration {
                problems.push(format!(
                    "faults[{i}].at: `{}` is at or after the end of the run: expected a start before the duration, {}",
                    Dur(f.window.start),
                    raw.duration
                ));
            } else if let Some(message) = f.window.too_many_windows(duration) {
                problems.push(format!("faults[{i}].pattern: {message}"));
            }
        }
        problems.extend(too_many_run_windows(raw, duration));
    }
    if raw.max_in_flight == Some(0) {
        problems.push("max_in_flight: `0` lets no request start: expected at least 1".to_string());
    }
    if let Some(message) = crate::fault::too_many_faults(&raw.faults) {
        problems.push(format!("faults[{MAX_FAULTS}]: {message}"));
    }
    let fault_names = raw.faults.iter().map(|f| f.name.as_str());
    problems.extend(used_twice(fault_names).map(|(i, name)| {
        format!("faults[{i}].name: `{name}` is used by another fault; give each a name")
    }));
    if let LoadSection::Routes(load) = &raw.load {
        let load_names = load.iter().map(|l| l.0.name.as_str());
        problems
            .extend(used_twice(load_names).map(|(i, name)| {
                format!("load[{i}].name: `{name}` is used by another load route")
            }));
    }
    for (i, p) in raw.phases.iter().enumerate() {
        if p.to.get() <= p.from.get() {
            problems.push(format!(
                "phases[{i}].to: `{}` must be after `from` ({})",
                p.to, p.from
            ));
        }
    }
    problems
}

/// Why the faults' patterns together open more windows in the run than
/// [`MAX_RUN_WINDOWS`], located at the fault whose pattern passes the limit.
/// Faults that fail their own checks (a start after the end, too many
/// windows of their own) are reported there and not counted again.
fn too_many_run_windows(raw: &RawExperiment, duration: Duration) -> Option<String> {
    let counts = raw.faults.iter().map(|f| {
        let alone = f.window.start < duration && f.window.too_many_windows(duration).is_none();
        if alone {
            f.window.pattern_windows(duration)
        } else {
            0
        }
    });
    let mut total = 0u128;
    let mut passed_at = None;
    for (i, windows) in counts.enumerate() {
        total += windows;
        if total > MAX_RUN_WINDOWS && passed_at.is_none() {
            passed_at = Some(i);
        }
    }
    passed_at.map(|i| {
        format!(
            "faults[{i}].pattern: the faults' patterns open {total} windows in the run (this fault's passes the limit): expected at most {MAX_RUN_WINDOWS} in all faults together (fewer patterned faults, or longer `up` and `down` phases)"
        )
    })
}

/// Each name (with its index) that an earlier one already had.
fn used_twice<'a>(names: impl Iterator<Item = &'a str>) -> impl Iterator<Item = (usize, &'a str)> {
    let mut seen = std::collections::BTreeSet::new();
    names
        .enumerate()
        .filter(move |(_, name)| !seen.insert(*name))
}
