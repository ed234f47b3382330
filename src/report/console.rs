//! The summary printed at the end of a run: routes, breakers, verdicts.

use std::fmt::Write;

use super::RunReport;
use crate::experiment::drill::Ending;
use crate::experiment::vocabulary::{ERRORS, FALLBACK, REJECTED, REQUESTS, SUCCESS, TIMEOUTS};

/// The summary as text, for standard output. On a terminal it fits the
/// terminal's width (80 columns at least): its tables are laid out for
/// it and a longer line (a reason, a verdict's figures) goes on over the
/// next lines, indented. Off a terminal (a CI log, a file, `| grep`)
/// every line stays whole and the tables take 80 columns.
pub fn render(report: &RunReport) -> String {
    let stdout = std::io::stdout();
    if !std::io::IsTerminal::is_terminal(&stdout) {
        return render_within(report, MIN_WIDTH);
    }
    let width = rustix::termios::tcgetwinsize(&stdout)
        .map_or(0, |w| usize::from(w.ws_col))
        .max(MIN_WIDTH);
    wrap(&render_within(report, width), width)
}

/// `text` with each line longer than `width` broken at spaces, each
/// continuation indented 4 columns past its line's own indentation; a
/// word longer than a line stays whole.
pub fn wrap(text: &str, width: usize) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        if body.chars().count() <= width {
            out.push_str(line);
            continue;
        }
        let indent = body.len() - body.trim_start().len();
        let hanging = " ".repeat(indent + 4);
        let mut current = body[..indent].to_string();
        let mut empty = true;
        for word in body[indent..].split(' ') {
            let needed = current.chars().count() + usize::from(!empty) + word.chars().count();
            if !empty && needed > width {
                out.push_str(&current);
                out.push('\n');
                current = hanging.clone();
                empty = true;
            }
            if !empty {
                current.push(' ');
            }
            current.push_str(word);
            empty = false;
        }
        out.push_str(&current);
        out.push_str(end);
    }
    out
}

/// The narrowest terminal the summary's own lines fit (an expectation or
/// a reason as long as the user wrote it excepted).
pub const MIN_WIDTH: usize = 80;

/// The route table on one line per route: this wide.
const ONE_TABLE_WIDTH: usize = 98;

/// The summary as text, its tables within `width` columns: the route
/// table in one piece when it fits, else in two (outcomes, then times).
pub fn render_within(report: &RunReport, width: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n{} (seed {}, {} clock, {:.1}s)",
        report.experiment,
        report.seed,
        report.clock.name(),
        report.duration_ms / 1000.0
    );
    routes(&mut out, report, width);
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
    if !report.not_drilled.is_empty() {
        let _ = writeln!(
            out,
            "\n  not drilled ({} keys of the imported files; the verdict is about the rest):",
            report.not_drilled.len()
        );
        for n in &report.not_drilled {
            let _ = writeln!(out, "    {n}");
        }
    }
    ending(&mut out, &report.ending);
    verdicts(&mut out, report);
    out
}

/// The table of routes: requests, outcomes (in the words of
/// [`crate::experiment::vocabulary`]), latency, amplification, in one
/// table when `width` holds it, else two; a run that sent no load of its
/// own (`load: external`) says so instead.
fn routes(out: &mut String, report: &RunReport, width: usize) {
    if report.routes.is_empty() {
        let _ = writeln!(
            out,
            "\n  no routes: firedrill sent no load of its own (load: external)"
        );
        return;
    }
    let one = width >= ONE_TABLE_WIDTH;
    let _ = write!(
        out,
        "\n  {:<12} {:>8} {:>8} {:>9} {:>8} {:>9}",
        "route", REQUESTS.word, SUCCESS.word, FALLBACK.word, ERRORS.word, REJECTED.word,
    );
    if one {
        times_header(out);
    }
    let _ = writeln!(out);
    for r in &report.routes {
        let _ = write!(
            out,
            "  {:<12} {:>8} {:>7.1}% {:>8.1}% {:>7.1}% {:>8.1}%",
            r.route, r.requests, r.success_pct, r.fallback_pct, r.errors_pct, r.rejected_pct,
        );
        if one {
            times_row(out, r);
        }
        let _ = writeln!(out);
    }
    if !one {
        let _ = write!(out, "\n  {:<12}", "route");
        times_header(out);
        let _ = writeln!(out);
        for r in &report.routes {
            let _ = write!(out, "  {:<12}", r.route);
            times_row(out, r);
            let _ = writeln!(out);
        }
    }
    for r in report.routes.iter().filter(|r| !r.grpc_statuses.is_empty()) {
        let statuses: Vec<String> = r
            .grpc_statuses
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "  {:<12} gRPC statuses: {}",
            r.route,
            statuses.join(", ")
        );
    }
}

/// The heads of the time columns: timeouts, p50, p99, amplification.
fn times_header(out: &mut String) {
    let _ = write!(
        out,
        " {:>9} {:>9} {:>9} {:>6}",
        TIMEOUTS.word, "p50", "p99", "ampl."
    );
}

/// A route's time columns.
fn times_row(out: &mut String, r: &super::summary::RouteSummary) {
    let _ = write!(
        out,
        " {:>9} {:>7.1}ms {:>7.1}ms {:>6.2}",
        r.timeouts, r.latency_ms.p50, r.latency_ms.p99, r.amplification
    );
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
/// not judged with why, a held regression sentence with the runs its
/// baseline was made of, and the run's verdict.
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
        if let Some(why) = &v.inconclusive {
            let _ = writeln!(out, "  ???? {}", v.expectation);
            let _ = writeln!(out, "         inconclusive: {why}");
            let _ = writeln!(out, "         would have seen: {}", v.seen);
            continue;
        }
        let mark = if v.passed { "ok  " } else { "FAIL" };
        let _ = writeln!(out, "  {mark} {}", v.expectation);
        if v.passed
            && let Some(baseline) = &v.baseline
        {
            let _ = writeln!(out, "         baseline: {baseline}");
        }
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
    let mut of = format!("{held} of {} held", plural(judged.len(), "expectation"));
    let inconclusive = judged.iter().filter(|v| v.inconclusive.is_some()).count();
    if inconclusive > 0 {
        of.push_str(&format!(
            "; {inconclusive} inconclusive: the evidence cannot carry {}",
            if inconclusive == 1 { "it" } else { "them" }
        ));
    }
    let awaiting = report.verdicts.iter().filter(|v| v.awaits_history).count();
    if awaiting > 0 {
        of.push_str(&format!(
            "; {awaiting} regression {} not judged until the history holds enough passing runs",
            if awaiting == 1 {
                "expectation"
            } else {
                "expectations"
            }
        ));
    }
    let ran = format!("{:.1}s", report.duration_ms / 1000.0);
    match &report.ending {
        Ending::Completed => format!("{}: {of}", report.verdict.label()),
        Ending::Halted { condition, .. } => format!(
            "HALTED at {ran} by `{condition}`, so the run fails; {of} over the {ran} it ran"
        ),
        Ending::Interrupted => {
            format!("INTERRUPTED at {ran}, so the run fails; {of} over the {ran} it ran")
        }
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

/// One line per transition: time, edge, reason; a cycle that repeats
/// (a flapping breaker's open -> half_open -> open) is shown once, then
/// counted. The journal and the page keep every transition.
fn transitions(out: &mut String, list: &[super::TransitionReport]) {
    for line in collapse(list) {
        match line {
            Line::One(t) => {
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
            Line::Again {
                period,
                times,
                last,
            } => {
                let _ = writeln!(
                    out,
                    "                ... the {} above again {}, up to {:.3}s ({} more transitions, all in journal.jsonl and report.html)",
                    if period == 1 {
                        "transition".to_string()
                    } else {
                        format!("{period} transitions")
                    },
                    if times == 1 {
                        "once".to_string()
                    } else {
                        format!("{times} times")
                    },
                    last / 1000.0,
                    times * period
                );
            }
        }
    }
}

/// A line of a breaker's transitions on the console.
#[derive(Debug, PartialEq)]
enum Line<'a> {
    /// A transition as it is.
    One(&'a super::TransitionReport),
    /// The `period` transitions above, `times` more times, the last at
    /// `last` milliseconds.
    Again {
        /// How many transitions a cycle has.
        period: usize,
        /// How many more cycles.
        times: usize,
        /// When the last one was.
        last: f64,
    },
}

/// The fewest repeats of a cycle worth counting instead of listing.
const COLLAPSE_AFTER: usize = 2;

/// `list` with each run of a repeating cycle of one or two transitions
/// (the same edges in the same order) shown once and then counted.
fn collapse(list: &[super::TransitionReport]) -> Vec<Line<'_>> {
    let key = |t: &super::TransitionReport| (t.from.clone(), t.to.clone(), t.after_end);
    let mut out = Vec::new();
    let mut i = 0;
    while i < list.len() {
        let cycle = (1..=2).find_map(|period| {
            // How many transitions from i on repeat the cycle list[i..i+period].
            let start = i + period;
            let repeats = list[start.min(list.len())..]
                .iter()
                .enumerate()
                .take_while(|(k, t)| key(t) == key(&list[i + k % period]))
                .count();
            let times = repeats / period;
            (times >= COLLAPSE_AFTER).then_some((period, times))
        });
        match cycle {
            Some((period, times)) => {
                out.extend(list[i..i + period].iter().map(Line::One));
                let end = i + period + times * period;
                out.push(Line::Again {
                    period,
                    times,
                    last: list[end - 1].at_ms,
                });
                i = end;
            }
            None => {
                out.push(Line::One(&list[i]));
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::TransitionReport;
    use super::*;

    fn t(at_ms: f64, from: &str, to: &str) -> TransitionReport {
        TransitionReport {
            at_ms,
            from: from.to_string(),
            to: to.to_string(),
            reason: String::new(),
            after_end: false,
        }
    }

    /// A breaker that opens, then flaps `n` times, then closes.
    fn flapping(n: usize) -> Vec<TransitionReport> {
        let mut list = vec![t(1000.0, "closed", "open")];
        for k in 0..n {
            let at = 4000.0 + 3000.0 * k as f64;
            list.push(t(at, "open", "half_open"));
            list.push(t(at, "half_open", "open"));
        }
        list.push(t(90_000.0, "open", "half_open"));
        list.push(t(90_500.0, "half_open", "closed"));
        list
    }

    #[test]
    fn wrap_breaks_long_lines_at_spaces_with_a_hanging_indent_and_keeps_every_word() {
        let text = "  short\n        12.000s  half_open -> closed  (failure_rate 0% and slow_call_rate 0% below thresholds over 3 calls)\n";
        let wrapped = wrap(text, 40);
        for line in wrapped.lines() {
            assert!(line.chars().count() <= 40, "{line}");
        }
        let lines: Vec<&str> = wrapped.lines().collect();
        assert_eq!(lines[0], "  short");
        assert!(lines[2].starts_with("            ") && !lines[2].starts_with("             "));
        let words = |s: &str| s.split_whitespace().map(str::to_string).collect::<Vec<_>>();
        assert_eq!(words(&wrapped), words(text));
        assert!(wrapped.ends_with('\n'));
        // A word longer than the line stays whole; a short text is as it was.
        assert_eq!(wrap("  abcdefghij", 5), "  abcdefghij");
        assert_eq!(wrap(text, 200), text);
    }

    #[test]
    fn a_flapping_breaker_shows_one_cycle_and_counts_the_rest() {
        let list = flapping(27);
        let mut out = String::new();
        transitions(&mut out, &list);
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 6, "{out}");
        assert_eq!(
            lines[3],
            "                ... the 2 transitions above again 26 times, up to 82.000s \
             (52 more transitions, all in journal.jsonl and report.html)"
        );
        assert!(lines[4].contains("open -> half_open") && lines[5].contains("half_open -> closed"));
    }

    #[test]
    fn transitions_that_do_not_repeat_are_each_shown() {
        // One cycle, and a second: not yet a repeat worth counting.
        for list in [flapping(1), flapping(2)] {
            let mut out = String::new();
            transitions(&mut out, &list);
            assert_eq!(out.lines().count(), list.len(), "{out}");
        }
        // Three: the first shown, the next two counted.
        assert_eq!(
            collapse(&flapping(3))[3],
            Line::Again {
                period: 2,
                times: 2,
                last: 10_000.0
            }
        );
    }

    #[test]
    fn a_transition_after_the_end_is_never_counted_into_a_cycle() {
        let mut list = flapping(3);
        for x in list.iter_mut().skip(3) {
            x.after_end = true;
        }
        let lines = collapse(&list);
        assert!(lines.iter().all(|l| matches!(l, Line::One(_))), "{lines:?}");
    }
}
