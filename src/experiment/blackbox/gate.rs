//! The evidence gate: before a user's service is judged, whether what the
//! drill saw of each inferred breaker can carry a verdict. A breaker whose
//! evidence cannot is named with the reason, and every sentence about it
//! is inconclusive: neither a pass nor a fail.
//!
//! The evidence cannot carry a verdict when:
//! * the inferred journal is not a path of the breaker's state machine
//!   (from closed, each transition leaves the state the one before
//!   reached, and never goes to the state it is in);
//! * the calls were expected to carry the requests' ids and fewer than
//!   [`PAIRED_FLOOR`] percent carried the id of one of the drill's
//!   requests;
//! * the agent in front of the dependency lost records (dropped before the
//!   drill read them, or a last read that failed);
//! * the caller contradicts the breaker's declared settings: an inferred
//!   open in which no request was short-circuited while calls reached the
//!   dependency;
//! * a load worker lost outcomes (reported by the load, not per breaker).

use crate::defense::breaker::State;
use crate::defense::breaker::journal::{Reason, Transition};
use crate::experiment::timeline::BreakerInfo;

/// The least share of calls, in percent, that must carry a drill request's
/// id where ids were expected.
pub const PAIRED_FLOOR: u64 = 95;

/// Why one breaker's evidence cannot carry a verdict.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    /// The breaker (`None`: the whole run, such as a load worker's loss).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<String>,
    /// What is wrong with the evidence, with its figures.
    pub reason: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.breaker {
            Some(b) => write!(f, "breaker {b}: {}", self.reason),
            None => f.write_str(&self.reason),
        }
    }
}

/// The findings on every inferred breaker of `breakers`, from its
/// evidence and its inferred transitions among `transitions`.
pub fn audit(breakers: &[BreakerInfo], transitions: &[Transition]) -> Vec<Finding> {
    let mut findings = Vec::new();
    for info in breakers {
        let finding = |reason: String| Finding {
            breaker: Some(info.name.clone()),
            reason,
        };
        let inferred: Vec<&Transition> = transitions
            .iter()
            .filter(|t| t.breaker == info.name && matches!(t.reason, Reason::Inferred { .. }))
            .collect();
        if let Some(broken) = invalid_step(&inferred) {
            findings.push(finding(broken));
        }
        let Some(q) = &info.evidence else { continue };
        // No call at all holds no share below the floor (0 < 0 is false).
        if q.ids_expected && q.paired * 100 < q.calls * PAIRED_FLOOR {
            findings.push(finding(format!(
                "{} of {} calls to its dependency ({:.1}%) carried the id of one of the drill's requests, where the ids were expected (at least {PAIRED_FLOOR}%): the service does not pass them on, or passes others",
                q.paired,
                q.calls,
                q.paired as f64 * 100.0 / q.calls as f64
            )));
        }
        if let Some(lost) = &q.lost {
            findings.push(finding(format!("records lost: {lost}")));
        }
        for c in &q.contradicted {
            findings.push(finding(format!(
                "the caller contradicts its declared settings (probes, wait_in_open): {c}"
            )));
        }
    }
    findings
}

/// The first step of `journal` that is no path of the state machine.
fn invalid_step(journal: &[&Transition]) -> Option<String> {
    let mut state = State::Closed;
    for t in journal {
        if t.from != state || t.from == t.to {
            return Some(format!(
                "its inferred journal is no path of the state machine: {} -> {} at {} while {state}",
                t.from,
                t.to,
                crate::experiment::expect::verdict::secs(t.at)
            ));
        }
        state = t.to;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Duration;
    use crate::experiment::blackbox::evidence::Quality;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn inferred(at: u64, from: State, to: State) -> Transition {
        Transition {
            at: ms(at),
            breaker: "inventory".to_string(),
            from,
            to,
            reason: Reason::Inferred {
                evidence: String::new(),
                arrivals: 0,
                sends: 0,
                confidence: "high",
                proven: None,
            },
        }
    }

    fn info(evidence: Option<Quality>) -> BreakerInfo {
        BreakerInfo {
            name: "inventory".to_string(),
            wait_in_open: ms(2000),
            path_glob: None,
            evidence,
        }
    }

    fn good() -> Quality {
        Quality {
            calls: 200,
            paired: 200,
            requests: 200,
            requests_reached: 160,
            ids_expected: true,
            ..Quality::default()
        }
    }

    use State::{Closed, HalfOpen, Open};

    #[test]
    fn good_evidence_and_a_valid_journal_carry_a_verdict() {
        let journal = [
            inferred(3000, Closed, Open),
            inferred(5000, Open, HalfOpen),
            inferred(5005, HalfOpen, Closed),
        ];
        assert_eq!(audit(&[info(Some(good()))], &journal), []);
    }

    #[test]
    fn an_open_while_open_is_no_path_of_the_state_machine() {
        let journal = [inferred(3093, Closed, Open), inferred(5089, Closed, Open)];
        let findings = audit(&[info(Some(good()))], &journal);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0]
                .reason
                .contains("closed -> open at 5.089s while open"),
            "{}",
            findings[0]
        );
        let stay = [inferred(3000, Closed, Closed)];
        assert_eq!(
            audit(&[info(None)], &stay).len(),
            1,
            "to the state it is in"
        );
    }

    #[test]
    fn calls_paired_below_the_floor_where_ids_were_expected_are_not_evidence() {
        let mut q = good();
        q.paired = 189;
        let findings = audit(&[info(Some(q.clone()))], &[]);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0].reason.starts_with("189 of 200 calls"),
            "{}",
            findings[0]
        );
        q.paired = 190;
        assert_eq!(audit(&[info(Some(q.clone()))], &[]), [], "95% is the floor");
        q.paired = 0;
        q.ids_expected = false;
        assert_eq!(
            audit(&[info(Some(q.clone()))], &[]),
            [],
            "paired by time, as declared"
        );
        (q.calls, q.ids_expected) = (0, true);
        assert_eq!(
            audit(&[info(Some(q))], &[]),
            [],
            "no call, no share to judge"
        );
    }

    #[test]
    fn lost_records_and_a_contradicted_declaration_are_named() {
        let mut q = good();
        q.lost = Some("dependency inventory: its agent dropped 40 of its records".into());
        q.contradicted = vec!["inferred open from 6s to 8s".into()];
        let findings: Vec<String> = audit(&[info(Some(q))], &[])
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            findings,
            [
                "breaker inventory: records lost: dependency inventory: its agent dropped 40 of its records",
                "breaker inventory: the caller contradicts its declared settings (probes, wait_in_open): inferred open from 6s to 8s"
            ]
        );
    }

    #[test]
    fn the_defense_lines_own_breakers_journal_is_not_audited() {
        let mut own = inferred(3000, Open, Open);
        own.reason = Reason::Manual { action: "forced" };
        assert_eq!(audit(&[info(None)], &[own]), []);
    }
}
