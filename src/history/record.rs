//! What a run leaves in the history: its row (who, what, when, how it
//! ended), its figures by name, and its expectations with what they saw,
//! each with its state (held, failed, not judged, or seeding a baseline)
//! and, for a judged regression sentence, the runs its baseline was made
//! of.
//!
//! Breaker figures are measured from the faults: `time_to_open_ms` from
//! the first fault's start to the first opening at or after it,
//! `time_to_half_open_ms` from that opening to the next half-open,
//! `time_to_close_ms` from the first fault's end to the first closing
//! after that opening (negative when it closed while the fault was still
//! on). A figure that did not happen is absent, not zero.

use crate::report::RunReport;

use super::HistoryError;
use super::db::{Cell, Db, Kind};
use super::read::{FAILED, HELD, INCONCLUSIVE, NOT_JUDGED, SEED};

/// What the report does not say about a run.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    /// A hash of the experiment as it was run (the file's text and every
    /// `--set`).
    pub file_hash: String,
    /// Where its report folder went.
    pub report_dir: Option<String>,
    /// When it was recorded (RFC 3339, wall clock): virtual runs have no
    /// start time of their own.
    pub recorded_at: String,
}

/// FNV-1a over `parts`, as 16 hex digits: the same text, the same hash,
/// on every machine and build.
pub fn hash(parts: &[&str]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// The run's figures, by name, in a stable order.
pub fn figures(report: &RunReport) -> Vec<(String, f64)> {
    let mut out = vec![("run.duration_ms".to_string(), report.duration_ms)];
    for r in &report.routes {
        let p = |f: &str| format!("route.{}.{f}", r.route);
        out.extend([
            (p("requests"), r.requests as f64),
            (p("success_pct"), r.success_pct),
            (p("fallback_pct"), r.fallback_pct),
            (p("errors_pct"), r.errors_pct),
            (p("rejected_pct"), r.rejected_pct),
            (p("timeouts"), r.timeouts as f64),
            (p("p50_ms"), r.latency_ms.p50),
            (p("p99_ms"), r.latency_ms.p99),
            (p("amplification"), r.amplification),
        ]);
        out.extend(
            r.fallback_by_kind_pct
                .iter()
                .map(|(kind, share)| (p(&format!("fallback_{kind}_pct")), *share)),
        );
    }
    let first_fault = report
        .faults
        .iter()
        .flat_map(|f| f.windows_ms.iter().copied())
        .min_by(|a, b| a.0.total_cmp(&b.0));
    for b in &report.breakers {
        let p = |f: &str| format!("breaker.{}.{f}", b.name);
        let opens = b.transitions.iter().filter(|t| t.to == "open").count();
        out.push((p("opens"), opens as f64));
        let Some((start, end)) = first_fault else {
            continue;
        };
        let Some(opened) = b
            .transitions
            .iter()
            .find(|t| t.to == "open" && t.at_ms >= start)
        else {
            continue;
        };
        out.push((p("time_to_open_ms"), opened.at_ms - start));
        let after = |to: &str| {
            b.transitions
                .iter()
                .find(|t| t.to == to && t.at_ms >= opened.at_ms)
                .map(|t| t.at_ms)
        };
        if let Some(at) = after("half_open") {
            out.push((p("time_to_half_open_ms"), at - opened.at_ms));
        }
        if let Some(at) = after("closed") {
            out.push((p("time_to_close_ms"), at - end));
        }
    }
    for pool in &report.pools {
        for s in &pool.servers {
            out.push((
                format!("pool.{}.{}.health_changes", pool.name, s.name),
                s.changes.len() as f64,
            ));
        }
    }
    for v in &report.verdicts {
        if let (Some(key), Some(figure)) = (&v.figure_key, v.figure) {
            out.push((key.clone(), figure));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// Writes `report` as one run, in one transaction; its id.
pub(crate) fn insert(
    db: &mut Db,
    shown: &str,
    report: &RunReport,
    provenance: &Provenance,
) -> Result<i64, HistoryError> {
    let query = |e: String| HistoryError::Query(shown.to_string(), e);
    db.begin().map_err(query)?;
    match insert_locked(db, report, provenance) {
        Ok(id) => {
            db.commit().map_err(query)?;
            Ok(id)
        }
        Err(e) => {
            db.rollback();
            Err(query(e))
        }
    }
}

fn insert_locked(db: &mut Db, report: &RunReport, provenance: &Provenance) -> Result<i64, String> {
    let verdict = report.verdict.label().to_lowercase().replace(' ', "_");
    let rows = db.query(
        "INSERT INTO firedrill_runs (experiment, file_hash, build, seed, clock, started_at, \
         recorded_at, host, verdict, passed, duration_ms, report_dir) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id",
        &[
            Cell::from(report.experiment.as_str()),
            Cell::from(provenance.file_hash.as_str()),
            Cell::from(report.build),
            Cell::Text(report.seed.to_string()),
            Cell::from(report.clock.name()),
            Cell::from(report.started_at.as_deref()),
            Cell::from(provenance.recorded_at.as_str()),
            Cell::from(report.host.as_deref()),
            Cell::Text(verdict),
            Cell::Bool(report.passed),
            Cell::Real(report.duration_ms),
            Cell::from(provenance.report_dir.as_deref()),
        ],
        &[Kind::Int],
    )?;
    let id = rows.first().map_or(0, |r| r[0].int());
    for (name, value) in figures(report) {
        db.execute(
            "INSERT INTO firedrill_figures (run_id, name, value) VALUES ($1, $2, $3)",
            &[Cell::Int(id), Cell::Text(name), Cell::Real(value)],
        )?;
    }
    for (position, v) in report.verdicts.iter().enumerate() {
        db.execute(
            "INSERT INTO firedrill_expectations (run_id, position, sentence, passed, not_judged, \
             expected, seen, figure, state, baseline_runs, figure_key, figure_limit, figure_unit) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
            &[
                Cell::Int(id),
                Cell::Int(position as i64),
                Cell::from(v.expectation.as_str()),
                Cell::Bool(v.passed),
                Cell::from(v.not_judged.as_deref().or(v.inconclusive.as_deref())),
                Cell::from(v.expected.as_str()),
                Cell::from(v.seen.as_str()),
                Cell::from(v.figure),
                Cell::from(state(v)),
                Cell::from(
                    (!v.baseline_runs.is_empty())
                        .then(|| {
                            let ids: Vec<String> =
                                v.baseline_runs.iter().map(i64::to_string).collect();
                            ids.join(",")
                        })
                        .as_deref(),
                ),
                Cell::from(v.figure_key.as_deref()),
                Cell::from(v.limit),
                Cell::from(v.unit),
            ],
        )?;
    }
    Ok(id)
}

/// The sentence's state in the run, as baselines choose by it.
fn state(v: &crate::experiment::expect::Verdict) -> &'static str {
    match (&v.not_judged, v.passed) {
        (Some(_), _) if v.seeds_baseline => SEED,
        (Some(_), _) => NOT_JUDGED,
        (None, _) if v.inconclusive.is_some() => INCONCLUSIVE,
        (None, true) => HELD,
        (None, false) => FAILED,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_stable_and_tells_texts_apart_even_split_differently() {
        assert_eq!(hash(&["name: a\n"]), hash(&["name: a\n"]));
        assert_ne!(hash(&["name: a\n"]), hash(&["name: b\n"]));
        assert_ne!(hash(&["ab", "c"]), hash(&["a", "bc"]));
        assert_eq!(hash(&[]).len(), 16);
    }
}
