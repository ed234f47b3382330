//! Checking the names an expectation refers to against an experiment, so
//! `firedrill validate` reports an unknown breaker, fault, route or phase
//! before anything runs.

use std::collections::BTreeSet;

use crate::experiment::timeline::Timeline;

use super::ast::{Anchor, Expectation, Name, Rule, Window};
use super::grammar::closest;

/// The names an experiment defines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Names {
    /// Breakers of the defense line.
    pub breakers: BTreeSet<String>,
    /// Faults of the fault timeline.
    pub faults: BTreeSet<String>,
    /// Load routes (`load[].name`).
    pub routes: BTreeSet<String>,
    /// Phases.
    pub phases: BTreeSet<String>,
}

impl Names {
    /// The names a recorded run shows (routes: those that sent requests).
    pub fn of(timeline: &Timeline) -> Names {
        Names {
            breakers: timeline.breakers.iter().map(|b| b.name.clone()).collect(),
            faults: timeline.faults.iter().map(|f| f.name.clone()).collect(),
            routes: timeline.requests.iter().map(|r| r.route.clone()).collect(),
            phases: timeline.phases.iter().map(|p| p.name.clone()).collect(),
        }
    }
}

/// Every name in `expectation` that `names` does not define, each with its
/// column and the closest known name, joined with `; `.
pub fn check(expectation: &Expectation, names: &Names) -> Result<(), String> {
    let mut refs: Vec<Reference<'_>> = Vec::new();
    let window = |w| window_name(w, names);
    match &expectation.rule {
        Rule::Sequence { breaker, .. } | Rule::WaitInOpen { breaker, .. } => {
            refs.push(("breaker", breaker, &names.breakers));
        }
        Rule::Reaches {
            breaker, anchor, ..
        } => {
            refs.push(("breaker", breaker, &names.breakers));
            if let Anchor::FaultStart(f) | Anchor::FaultEnd(f) = anchor {
                refs.push(("fault", f, &names.faults));
            }
        }
        Rule::Count {
            breaker, window: w, ..
        }
        | Rule::Stays {
            breaker, window: w, ..
        } => {
            refs.push(("breaker", breaker, &names.breakers));
            refs.extend(window(w));
        }
        Rule::Calls { window: w, .. } => refs.extend(window(w)),
        Rule::Route {
            route, window: w, ..
        } => {
            refs.push(("route", route, &names.routes));
            refs.extend(window(w));
        }
    }
    let problems: Vec<String> = refs
        .into_iter()
        .filter(|(_, name, known)| !known.contains(&name.text))
        .map(|(kind, name, known)| unknown(kind, name, known))
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// The name a window refers to, its kind and the names it must be among.
fn window_name<'a>(window: &'a Window, names: &'a Names) -> Option<Reference<'a>> {
    match window {
        Window::Run | Window::Between(..) => None,
        Window::During(f) => Some(("fault", f, &names.faults)),
        Window::While { breaker, .. } => Some(("breaker", breaker, &names.breakers)),
        Window::Phase(p) => Some(("phase", p, &names.phases)),
    }
}

/// A name referred to: its kind, the name, and the known names of its kind.
type Reference<'a> = (&'static str, &'a Name, &'a BTreeSet<String>);

/// `unknown breaker "inventori" at column 9 (did you mean "inventory"?);
/// the breakers are: inventory`.
pub(crate) fn unknown(kind: &str, name: &Name, known: &BTreeSet<String>) -> String {
    let hint = closest(&name.text, known.iter().map(String::as_str))
        .map(|c| format!(" (did you mean \"{c}\"?)"))
        .unwrap_or_default();
    let list = if known.is_empty() {
        format!("the experiment has no {kind}s")
    } else {
        format!(
            "the {kind}s are: {}",
            known.iter().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    format!(
        "unknown {kind} \"{}\" at column {}{hint}; {list}",
        name.text, name.column
    )
}
