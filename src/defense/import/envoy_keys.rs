//! The Envoy keys no value of the import cites, each named with what it
//! is to the import (the pool's name, a limit of HIGH routes, a listener's
//! own setting), so no key of the file goes unaccounted.

use super::source::{Entry, Source, display};

/// Whether a line of `shown` cites `key` (or the enclosing key of its
/// value) as a comment does: `KEY (line N)`.
pub(super) fn cited(shown: &str, path: &[String]) -> bool {
    (1..=path.len()).rev().any(|n| {
        let name = format!("{} (line ", display(&path[..n]));
        shown.contains(&name)
    })
}

/// A note for each key of `text` that `shown` (the rendered routes and
/// pools) does not cite, saying what it is as `why` says.
pub(super) fn uncited(
    file: &str,
    text: &str,
    shown: &str,
    why: fn(&Source, &Entry) -> &'static str,
) -> Vec<String> {
    let Ok(source) = Source::yaml(file, text, false) else {
        return Vec::new();
    };
    let mut notes = Vec::new();
    for e in &source.entries {
        if !cited(shown, &e.path) {
            let why = why(&source, e);
            notes.push(format!(
                "{} (line {}) = {}: {why}",
                e.key(),
                e.line,
                e.value
            ));
        }
    }
    notes
}

/// What an Envoy key no value cites is to the import.
pub(super) fn why(source: &Source, e: &Entry) -> &'static str {
    let priority_of = |path: &[String]| -> Option<String> {
        let at = path.iter().position(|s| s.starts_with("thresholds"))?;
        let threshold = display(path.get(..=at + 1)?);
        source
            .entries
            .iter()
            .find(|e| e.key() == format!("{threshold}.priority"))
            .map(|e| e.value.clone())
    };
    {
        let last = e.path.last().map_or("", String::as_str);
        let key = e.key();
        if key.contains("listeners[") {
            "not read: the listener's own setting (of a listener, only its routes' match and route are read)"
        } else if priority_of(&e.path).as_deref() == Some("HIGH") {
            "ignored: a limit of HIGH priority routes; firedrill's routes are DEFAULT"
        } else {
            match last {
                "name" => "the pool's name",
                "cluster_name" => "ignored: the assignment's own name for its cluster",
                "priority" => "the limits firedrill's routes follow",
                "max_connections" | "max_pending_requests" => {
                    "checked: at or above max_requests, a request never waits for a connection (docs/import.md)"
                }
                _ => "read with the values above",
            }
        }
    }
}
