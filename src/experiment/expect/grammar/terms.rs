//! The phrases sentences share: the optional window, the bound and its
//! typed value, a pool's server, and the anchor a timing counts from.

use super::cursor::Parser;
use super::error::ParseError;
use super::lex::Kind;
use crate::experiment::expect::ast::{Anchor, Bound, Name, Server, Value, ValueKind, Window};
use crate::schema::units::{Dur, Percent};

/// The words that start a window.
pub(crate) const WINDOW_WORDS: [&str; 4] = ["during", "while", "between", "in"];

/// An optional window: `during FAULT`, `while BREAKER is STATE`, `while
/// instance I [of P] is ejected`, `between T and T`, `in phase NAME`;
/// [`Window::Run`] when none is written.
pub(crate) fn window(p: &mut Parser) -> Result<Window, ParseError> {
    if p.eat("during") {
        return p.name("a fault name").map(Window::During);
    }
    if p.eat("while") {
        if p.eat("instance") {
            let server = server(p)?;
            p.keyword("is")?;
            p.keyword("ejected")?;
            return Ok(Window::Ejected(server));
        }
        let breaker = p.name("a breaker name")?;
        p.keyword("is")?;
        let state = p.state()?;
        return Ok(Window::While { breaker, state });
    }
    if p.eat("between") {
        let from = p.duration()?;
        p.keyword("and")?;
        let to = p.duration()?;
        if to <= from {
            return Err(p.error_at_previous(format!(
                "the window ends at {} but starts at {}: write the earlier time first",
                Dur(to),
                Dur(from)
            )));
        }
        return Ok(Window::Between(from, to));
    }
    if p.eat("in") {
        p.keyword("phase")?;
        return p.name("a phase name").map(Window::Phase);
    }
    Ok(Window::Run)
}

/// A bound: `OP VALUE` or `within P% of VALUE`, the value of `kind`.
/// `window_allowed`: no window was written, so one could still come here
/// (the error then offers both).
pub(crate) fn bound(
    p: &mut Parser,
    kind: ValueKind,
    window_allowed: bool,
) -> Result<Bound, ParseError> {
    if let Some(op) = p.peek().and_then(|t| match t.kind {
        Kind::Op(op) => Some(op),
        _ => None,
    }) {
        p.advance();
        return value(p, kind).map(|v| Bound::Cmp(op, v));
    }
    if p.eat("within") {
        let tolerance = match p
            .peek_word()
            .map(|w| (w.ends_with('%'), w.parse::<Percent>()))
        {
            Some((true, Ok(t))) => t.percent(),
            _ => return Err(p.error("a tolerance such as \"5%\"", &[])),
        };
        p.advance();
        p.keyword("of")?;
        let of = value(p, kind)?;
        return Ok(Bound::Within { tolerance, of });
    }
    let comparison = "a comparison (>=, <=, ==, >, <, within)";
    if window_allowed {
        let mut candidates = vec!["==", ">=", "<=", "within"];
        candidates.extend(WINDOW_WORDS);
        Err(p.error(
            &format!("a window (during, while, between, in phase) or {comparison}"),
            &candidates,
        ))
    } else {
        Err(p.error(comparison, &["==", ">=", "<=", "within"]))
    }
}

/// A value of `kind`.
fn value(p: &mut Parser, kind: ValueKind) -> Result<Value, ParseError> {
    let word = p.peek_word().unwrap_or_default();
    let (parsed, what) = match kind {
        ValueKind::Share => (
            word.strip_suffix('%')
                .and_then(|_| word.parse::<Percent>().ok())
                .map(|pc| Value::Percent(pc.percent())),
            "a percentage from 0% to 100% such as \"99%\"",
        ),
        ValueKind::Duration => (
            word.parse::<Dur>().ok().map(|d| Value::Duration(d.get())),
            "a duration such as \"5ms\"",
        ),
        ValueKind::Count => (
            word.parse::<u64>().ok().map(Value::Count),
            "a whole number such as \"0\"",
        ),
        ValueKind::Quantity => (
            quantity(word),
            "a duration (\"300ms\"), a percentage (\"99.5%\") or a number",
        ),
        ValueKind::Ratio => (
            word.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .map(Value::Number),
            "a number such as \"3\"",
        ),
    };
    match parsed {
        Some(v) => {
            p.advance();
            Ok(v)
        }
        None => Err(p.error(what, &[])),
    }
}

/// A duration, a percentage or any finite number (a query's bound).
fn quantity(word: &str) -> Option<Value> {
    if word.ends_with('%') {
        return word
            .parse::<Percent>()
            .ok()
            .map(|pc| Value::Percent(pc.percent()));
    }
    if let Ok(x) = word.parse::<f64>() {
        return x.is_finite().then_some(Value::Number(x));
    }
    word.parse::<Dur>().ok().map(|d| Value::Duration(d.get()))
}

/// `NAME [of POOL]`, after `instance`.
pub(crate) fn server(p: &mut Parser) -> Result<Server, ParseError> {
    let name = p.name("an instance name (a pool server)")?;
    let pool = if p.eat("of") {
        Some(p.name("a pool name")?)
    } else {
        None
    };
    Ok(Server { name, pool })
}

/// After `of`: `FAULT.start`, `FAULT.end`, `fault FAULT` (its start), a
/// bare fault name (its start) or a time such as `10s`.
pub(crate) fn anchor(p: &mut Parser) -> Result<Anchor, ParseError> {
    let explicit_fault = p.eat("fault");
    let starts_with_digit = p
        .peek_word()
        .is_some_and(|w| w.starts_with(|c: char| c.is_ascii_digit()));
    if !explicit_fault && starts_with_digit {
        return p.duration().map(Anchor::At);
    }
    let what = if explicit_fault {
        "a fault name"
    } else {
        "a fault (\"FAULT.start\", \"FAULT.end\", \"fault FAULT\") or a time such as \"10s\""
    };
    let name = p.name(what)?;
    let split = |suffix: &str| {
        name.text
            .strip_suffix(suffix)
            .filter(|n| !n.is_empty())
            .map(|n| Name {
                text: n.to_string(),
                column: name.column,
            })
    };
    Ok(if let Some(fault) = split(".end") {
        Anchor::FaultEnd(fault)
    } else if let Some(fault) = split(".start") {
        Anchor::FaultStart(fault)
    } else {
        Anchor::FaultStart(name)
    })
}
