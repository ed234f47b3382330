//! The summary printed at the end of a run: routes, breakers, verdicts.

use std::fmt::Write;

use super::RunReport;
use crate::experiment::drill::Ending;

/// The summary as text.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} (seed {}, {} clock, {:.1}s)",
        report.experiment,
        report.seed,
        report.clock.name(),
        report.duration_ms / 1000.0
    );
    routes(&mut out, report);
    if !report.instance_hits.is_empty() {
        let each: Vec<String> = report
            .instance_hits
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "\n  calls that reached each instance: {}",
            each.join(", ")
        );
    }
    for b in &report.breakers {
        let _ = writeln!(out, "\n  breaker {} (now {})", b.name, b.final_state);
        transitions(&mut out, &b.transitions);
        if let Some(reported) = &b.reported {
            let _ = writeln!(out, "    reported by the service:");
            transitions(&mut out, reported);
        }
    }
    pools(&mut out, report);
    for w in &report.warnings {
        let _ = writeln!(out, "\n  warning: {w}");
    }
    ending(&mut out, &report.ending);
    verdicts(&mut out, report);
    out
}

/// The table of routes: requests, outcomes, latency, amplification; a
/// run that sent no load of its own (`load: external`) says so instead.
fn routes(out: &mut String, report: &RunReport) {
    if report.routes.is_empty() {
        let _ = writeln!(
            out,
            "\n  no routes: firedrill sent no load of its own (load: external)"
        );
        return;
    }
    let _ = writeln!(
        out,
        "\n  {:<12} {:>8} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>7}",
        "route", "requests", "success", "fallback", "rejected", "timeouts", "p50", "p99", "ampl."
    );
    for r in &report.routes {
        let _ = writeln!(
            out,
            "  {:<12} {:>8} {:>8.1}% {:>8.1}% {:>8.1}% {:>9} {:>8.1}ms {:>8.1}ms {:>7.2}",
            r.route,
            r.requests,
            r.success_pct,
            r.fallback_pct,
            r.rejected_pct,
            r.timeouts,
            r.latency_ms.p50,
            r.latency_ms.p99,
            r.amplification
        );
    }
}

/// Each pool's servers, their state at the end and their health changes.
fn pools(out: &mut String, report: &RunReport) {
    for p in &report.pools {
        let _ = writeln!(out, "\n  pool {}", p.name);
        for s in &p.servers {
            let _ = writeln!(
                out,
                "    {}{} ({} at the end)",
                s.name,
                if s.backup { " (backup)" } else { "" },
                if s.healthy_at_end {
                    "in rotation"
                } else {
                    "out"
                }
            );
            for c in &s.changes {
                let _ = writeln!(
                    out,
                    "    {:>9.3}s  {}  ({})",
                    c.at_ms / 1000.0,
                    if c.healthy { "in rotation" } else { "ejected" },
                    c.by
                );
            }
        }
    }
}

/// How a run that did not complete ended (nothing for one that did).
fn ending(out: &mut String, ending: &Ending) {
    match ending {
        Ending::Completed => {}
        Ending::Halted { condition, seen } => {
            let _ = writeln!(out, "\n  HALTED: {condition} ({seen}); every fault removed");
        }
        Ending::Interrupted => {
            let _ = writeln!(out, "\n  INTERRUPTED: every fault removed; partial report");
        }
        Ending::NotHealthy { failed } => {
            let _ = writeln!(
                out,
                "\n  NOT HEALTHY BEFORE INJECTION: no fault was injected; the steady state failed:"
            );
            for f in failed {
                let _ = writeln!(out, "    {f}");
            }
        }
    }
}

/// The expectations, each failed one with what was expected and seen, one
/// not judged with why, and the run's verdict.
fn verdicts(out: &mut String, report: &RunReport) {
    if !report.verdicts.is_empty() {
        let _ = writeln!(out, "\n  expectations:");
    }
    for v in &report.verdicts {
        if let Some(why) = &v.not_judged {
            let _ = writeln!(out, "  skip {}", v.expectation);
            let _ = writeln!(out, "         not judged: {why}");
            continue;
        }
        let mark = if v.passed { "ok  " } else { "FAIL" };
        let _ = writeln!(out, "  {mark} {}", v.expectation);
        if !v.passed {
            let _ = writeln!(out, "         expected: {}", v.expected);
            let _ = writeln!(out, "         seen:     {}", v.seen);
            if let Some(at) = v.at {
                let _ = writeln!(out, "         at:       {:.3}s", at.as_secs_f64());
            }
        }
    }
    let _ = writeln!(out, "\n  {}", verdict_line(report));
}

/// The run's verdict with what decided it: `PASSED: 9 of 9 expectations
/// held`, `HALTED at 4.0s by ...: ...`, `NOT HEALTHY BEFORE INJECTION: ...`.
pub fn verdict_line(report: &RunReport) -> String {
    let judged: Vec<_> = report
        .verdicts
        .iter()
        .filter(|v| v.not_judged.is_none())
        .collect();
    let held = judged.iter().filter(|v| v.passed).count();
    let of = format!("{held} of {} held", plural(judged.len(), "expectation"));
    let ran = format!("{:.1}s", report.duration_ms / 1000.0);
    match &report.ending {
        Ending::Completed => format!("{}: {of}", report.verdict.label()),
        Ending::Halted { condition, .. } => format!(
            "HALTED at {ran} by `{condition}`, so the run fails; {of} over the {ran} it ran"
        ),
        Ending::Interrupted => format!("INTERRUPTED at {ran}, so the run fails; {of} over the {ran} it ran"),
        Ending::NotHealthy { .. } => {
            let skipped = report.verdicts.len() - judged.len();
            format!(
                "NOT HEALTHY BEFORE INJECTION: {held} of {} held; {} not judged",
                plural(judged.len(), "steady-state check"),
                plural(skipped, "expectation")
            )
        }
    }
}

/// `1 expectation`, `4 expectations`.
fn plural(n: usize, noun: &str) -> String {
    if n == 1 {
        format!("{n} {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// One line per transition: time, edge, reason.
fn transitions(out: &mut String, list: &[super::TransitionReport]) {
    for t in list {
        let _ = writeln!(
            out,
            "    {:>9.3}s  {} -> {}  ({}){}",
            t.at_ms / 1000.0,
            t.from,
            t.to,
            t.reason,
            if t.after_end {
                "  [after the end: not judged]"
            } else {
                ""
            }
        );
    }
}
