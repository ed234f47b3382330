//! How a file is imported: `--strict`, and the application's own
//! exception classes mapped to what firedrill sees (`--exception
//! com.shop.StockException=503`, or `import: { exceptions: { ... } }` in
//! an experiment).

use std::collections::BTreeMap;

/// What a call can end with, as firedrill tells them apart: what an
/// exception class is raised for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Seen {
    /// A 4xx answer; `Some(code)` for one status only.
    Client(Option<u16>),
    /// A 5xx answer; `Some(code)` for one status only.
    Server(Option<u16>),
    /// No answer: a refused, reset or broken connection.
    Connect,
    /// No answer in time (the time limiter's `TimeoutException`).
    Timeout,
}

impl Seen {
    /// Reads `503`, `5xx`, `4xx`, `404`, `timeout` or `connection`.
    pub fn parse(text: &str) -> Result<Seen, String> {
        let t = text.trim();
        let bad = || {
            format!(
                "`{t}` is not what firedrill sees of a call: expected a 4xx or 5xx status (`503`), a class (`5xx`, `4xx`), `timeout` or `connection`"
            )
        };
        Ok(match t.to_ascii_lowercase().as_str() {
            "timeout" => Seen::Timeout,
            "connection" => Seen::Connect,
            "4xx" => Seen::Client(None),
            "5xx" => Seen::Server(None),
            code => match code.parse::<u16>() {
                Ok(c @ 400..=499) => Seen::Client(Some(c)),
                Ok(c @ 500..=599) => Seen::Server(Some(c)),
                _ => return Err(bad()),
            },
        })
    }
}

/// How to import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Refuse every key firedrill does not drill instead of listing it.
    pub strict: bool,
    /// The application's exception classes, by their whole name, each with
    /// what it is raised for (its subclasses are not known to firedrill:
    /// name each that a list names).
    pub exceptions: BTreeMap<String, Vec<Seen>>,
}

impl Options {
    /// Strict or not, with no classes of the application's own.
    pub fn strict(strict: bool) -> Options {
        Options {
            strict,
            exceptions: BTreeMap::new(),
        }
    }

    /// Adds `CLASS=OUTCOME[,OUTCOME...]` (the command line's `--exception`).
    pub fn add_exception(&mut self, written: &str) -> Result<(), String> {
        let Some((class, seen)) = written.split_once('=') else {
            return Err(format!(
                "--exception {written}: expected CLASS=OUTCOME, such as com.shop.StockException=503"
            ));
        };
        let seen = seen
            .split(',')
            .map(Seen::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|m| format!("--exception {written}: {m}"))?;
        self.exceptions.insert(class.trim().to_string(), seen);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_outcome_is_a_status_a_class_a_timeout_or_a_connection_error_and_nothing_else() {
        assert_eq!(Seen::parse("503"), Ok(Seen::Server(Some(503))));
        assert_eq!(Seen::parse("4xx"), Ok(Seen::Client(None)));
        assert_eq!(Seen::parse(" Timeout "), Ok(Seen::Timeout));
        assert_eq!(Seen::parse("connection"), Ok(Seen::Connect));
        assert!(Seen::parse("200").unwrap_err().contains("`200`"));
        let mut o = Options::default();
        o.add_exception("com.shop.StockException=503,timeout")
            .unwrap();
        assert_eq!(
            o.exceptions["com.shop.StockException"],
            [Seen::Server(Some(503)), Seen::Timeout]
        );
        assert!(o.add_exception("com.shop.X").is_err());
    }
}
