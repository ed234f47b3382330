//! The trace formats, one line at a time.
//!
//! * `requests`: firedrill's `requests.jsonl` (a run's report): the
//!   dependency's side of each request that reached it.
//! * `record`: `firedrill proxy --record` JSON lines: what the proxy answered.
//! * `nginx`: an access log written with
//!   `log_format firedrill '$msec "$request" $status $request_time';`
//!   (more fields may follow; they are ignored).
//! * `envoy`: Envoy's default access log format.

use std::fmt;

use serde::Deserialize;

use super::{Answer, Outcome};
use crate::clock::Duration;

/// Which kind of recording a trace file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    /// firedrill's `requests.jsonl` from a run's report directory.
    Requests,
    /// `firedrill proxy --record` JSON lines.
    Record,
    /// NGINX access log, `log_format firedrill '$msec "$request" $status
    /// $request_time';`.
    Nginx,
    /// Envoy's default access log format.
    Envoy,
}

impl TraceFormat {
    /// The format a recording's first line is written in, if it tells.
    pub fn sniff(line: &str) -> Option<TraceFormat> {
        let line = line.trim_start();
        if line.starts_with('{') {
            if line.contains("\"sent_ms\"") {
                return Some(TraceFormat::Requests);
            }
            return line.contains("\"at_ms\"").then_some(TraceFormat::Record);
        }
        if line.starts_with('[') {
            return Some(TraceFormat::Envoy);
        }
        let first = line.split(' ').next()?;
        first.parse::<f64>().is_ok().then_some(TraceFormat::Nginx)
    }

    /// Whether its times are wall-clock times (access logs), not offsets
    /// from a run's start (firedrill's own files).
    pub fn wall_clock(self) -> bool {
        matches!(self, TraceFormat::Nginx | TraceFormat::Envoy)
    }
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TraceFormat::Requests => "requests",
            TraceFormat::Record => "record",
            TraceFormat::Nginx => "nginx",
            TraceFormat::Envoy => "envoy",
        })
    }
}

/// Why a line did not parse: where, which field, what was expected.
#[derive(Debug)]
pub(super) struct LineError {
    /// 1-based column.
    pub column: usize,
    /// The field.
    pub key: &'static str,
    /// What was wrong and what was expected.
    pub message: String,
}

fn error(column: usize, key: &'static str, message: impl Into<String>) -> LineError {
    LineError {
        column,
        key,
        message: message.into(),
    }
}

/// Arrival (seconds on the trace's own clock) and answer of one line; no
/// answer for a request that never reached the dependency (rejected by a
/// breaker, shed by the client).
pub(super) type Parsed = (f64, Option<Outcome>);

/// Parses one non-empty line.
pub(super) fn parse_line(format: TraceFormat, line: &str) -> Result<Parsed, LineError> {
    match format {
        TraceFormat::Requests => requests(line),
        TraceFormat::Record => record(line),
        TraceFormat::Nginx => nginx(line),
        TraceFormat::Envoy => envoy(line),
    }
}

fn millis(ms: f64) -> Duration {
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

fn json<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, LineError> {
    serde_json::from_str(line).map_err(|e| {
        let text = e.to_string();
        let message = text
            .rsplit_once(" at line ")
            .map_or(text.as_str(), |(m, _)| m)
            .to_string();
        error(e.column().max(1), "", message)
    })
}

/// A line of `requests.jsonl`.
#[derive(Deserialize)]
struct RequestsLine {
    sent_ms: f64,
    latency_ms: Option<f64>,
    status: Option<u16>,
    client_error: Option<String>,
    fallback: Option<serde_json::Value>,
    defense_error: Option<String>,
    reached_dependency: Option<u32>,
}

/// How a call that failed in the defense line or at the client ended.
fn failure(kind: &str) -> Option<Answer> {
    match kind {
        "timeout" | "deadline" => Some(Answer::Hang),
        "connect" | "no_server" | "broken" => Some(Answer::Reset),
        _ => None,
    }
}

fn requests(line: &str) -> Result<Parsed, LineError> {
    let r: RequestsLine = json(line)?;
    let sent = r.sent_ms / 1000.0;
    if r.reached_dependency == Some(0) {
        return Ok((sent, None));
    }
    let answer = match (&r.defense_error, &r.client_error) {
        // The dependency's status is not kept when a fallback answered in
        // its place: it failed with a status, replayed as 503.
        (Some(e), _) if e == "status" => Answer::Status(match (r.fallback, r.status) {
            (None, Some(s)) => s,
            _ => 503,
        }),
        (Some(e), _) => failure(e)
            .ok_or_else(|| error(1, "defense_error", format!("unknown defense_error `{e}`")))?,
        (None, Some(e)) if e == "shed" => return Ok((sent, None)),
        (None, Some(e)) => failure(e)
            .ok_or_else(|| error(1, "client_error", format!("unknown client_error `{e}`")))?,
        (None, None) => Answer::Status(
            r.status
                .ok_or_else(|| error(1, "status", "expected a status or a client_error"))?,
        ),
    };
    let outcome = Outcome {
        answer,
        latency: millis(r.latency_ms.unwrap_or(0.0)),
    };
    Ok((sent, Some(outcome)))
}

/// A line of `firedrill proxy --record`.
#[derive(Deserialize)]
struct RecordLine {
    at_ms: f64,
    status: Option<u16>,
    latency_ms: Option<f64>,
}

fn record(line: &str) -> Result<Parsed, LineError> {
    let r: RecordLine = json(line)?;
    // No status: the proxy cut, reset or held the connection.
    let answer = r.status.map_or(Answer::Reset, Answer::Status);
    let outcome = Outcome {
        answer,
        latency: millis(r.latency_ms.unwrap_or(0.0)),
    };
    Ok((r.at_ms / 1000.0, Some(outcome)))
}

/// Splits off the next space-separated field: (column, field, rest).
fn field<'a>(line: &'a str, rest: &'a str) -> Option<(usize, &'a str, &'a str)> {
    let rest = rest.trim_start();
    if rest.is_empty() {
        return None;
    }
    let column = line.len() - rest.len() + 1;
    let end = rest.find(' ').unwrap_or(rest.len());
    Some((column, &rest[..end], &rest[end..]))
}

/// Splits off a field enclosed in `open` .. `close`: (column, inside, rest).
fn enclosed<'a>(
    line: &'a str,
    rest: &'a str,
    open: char,
    close: char,
    key: &'static str,
) -> Result<(usize, &'a str, &'a str), LineError> {
    let rest = rest.trim_start();
    let column = line.len() - rest.len() + 1;
    let inner = rest
        .strip_prefix(open)
        .ok_or_else(|| error(column, key, format!("expected `{open}`")))?;
    let end = inner
        .find(close)
        .ok_or_else(|| error(column, key, format!("no closing `{close}`")))?;
    Ok((column, &inner[..end], &inner[end + 1..]))
}

/// The next field, parsed as `T`.
fn number<'a, T: std::str::FromStr>(
    line: &'a str,
    rest: &'a str,
    key: &'static str,
    expected: &str,
) -> Result<(usize, T, &'a str), LineError> {
    let (column, text, rest) = field(line, rest)
        .ok_or_else(|| error(line.len() + 1, key, format!("missing; expected {expected}")))?;
    let value = text
        .parse()
        .map_err(|_| error(column, key, format!("`{text}`: expected {expected}")))?;
    Ok((column, value, rest))
}

fn status(column: usize, code: u16) -> Result<u16, LineError> {
    if (100..=599).contains(&code) {
        Ok(code)
    } else {
        Err(error(
            column,
            "status",
            format!("{code}: expected 100 to 599"),
        ))
    }
}

fn seconds(column: usize, key: &'static str, value: f64) -> Result<f64, LineError> {
    if value.is_finite() && value >= 0.0 {
        Ok(value)
    } else {
        Err(error(column, key, "expected seconds, 0 or more"))
    }
}

fn nginx(line: &str) -> Result<Parsed, LineError> {
    let (c, msec, rest) = number::<f64>(
        line,
        line,
        "msec",
        "seconds since the epoch, e.g. `1763373600.123`",
    )?;
    let msec = seconds(c, "msec", msec)?;
    let (_, _request, rest) = enclosed(line, rest, '"', '"', "request")?;
    let (c, code, rest) = number::<u16>(line, rest, "status", "an HTTP status")?;
    let code = if code == 499 { 499 } else { status(c, code)? };
    let (c, time, _) = number::<f64>(line, rest, "request_time", "seconds, e.g. `0.021`")?;
    let time = seconds(c, "request_time", time)?;
    // NGINX logs when the request ends; 499: the client closed first.
    let answer = if code == 499 {
        Answer::Hang
    } else {
        Answer::Status(code)
    };
    let outcome = Outcome {
        answer,
        latency: Duration::from_secs_f64(time),
    };
    Ok((msec - time, Some(outcome)))
}

fn envoy(line: &str) -> Result<Parsed, LineError> {
    let (c, start, rest) = enclosed(line, line, '[', ']', "start_time")?;
    let start = iso8601(start).ok_or_else(|| {
        error(
            c + 1,
            "start_time",
            "expected an RFC 3339 time, e.g. `2026-11-17T10:00:00.123Z`",
        )
    })?;
    let (_, _request, rest) = enclosed(line, rest, '"', '"', "request")?;
    let (c, code, rest) = number::<u16>(line, rest, "response_code", "a status (0: no response)")?;
    let (_, flags, rest) =
        field(line, rest).ok_or_else(|| error(line.len() + 1, "response_flags", "missing"))?;
    let (_, _, rest) = number::<u64>(line, rest, "bytes_received", "a byte count")?;
    let (_, _, rest) = number::<u64>(line, rest, "bytes_sent", "a byte count")?;
    let (_, duration, _) = number::<u64>(line, rest, "duration", "milliseconds")?;
    let answer = if code == 0 {
        // DC: the caller went away first; otherwise the upstream
        // connection failed (UF, UC, URX, UH, ...).
        if flags.split(',').any(|f| f == "DC") {
            Answer::Hang
        } else {
            Answer::Reset
        }
    } else {
        Answer::Status(status(c, code).map_err(|e| LineError {
            key: "response_code",
            ..e
        })?)
    };
    let outcome = Outcome {
        answer,
        latency: Duration::from_millis(duration),
    };
    Ok((start, Some(outcome)))
}

/// Seconds since the epoch of `YYYY-MM-DDTHH:MM:SS[.fff](Z|±HH:MM)`.
pub(crate) fn iso8601(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    let digits = |from: usize, len: usize| -> Option<i64> {
        let s = text.get(from..from + len)?;
        s.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| s.parse().ok())?
    };
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (year, month, day) = (digits(0, 4)?, digits(5, 2)?, digits(8, 2)?);
    let (hour, minute, second) = (digits(11, 2)?, digits(14, 2)?, digits(17, 2)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let mut i = 19;
    let mut fraction = 0.0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        fraction = format!("0.{}", text.get(start..i)?).parse().ok()?;
    }
    let offset = match text.get(i..)? {
        "Z" | "z" => 0,
        zone if zone.len() == 6 && matches!(zone.as_bytes()[0], b'+' | b'-') => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            sign * (digits(i + 1, 2)? * 3600 + digits(i + 4, 2)? * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Some(secs as f64 + fraction)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_format_is_told_from_a_first_line_of_each_kind() {
        let sniff = TraceFormat::sniff;
        assert_eq!(
            sniff(r#"{"id":0,"sent_ms":1.0}"#),
            Some(TraceFormat::Requests)
        );
        assert_eq!(
            sniff(r#"{"at_ms":1.0,"proxy":"p"}"#),
            Some(TraceFormat::Record)
        );
        assert_eq!(
            sniff(r#"[2026-11-17T02:14:00.100Z] "GET / HTTP/1.1" 200"#),
            Some(TraceFormat::Envoy)
        );
        assert_eq!(
            sniff(r#"1794881640.021 "GET / HTTP/1.1" 200 0.021"#),
            Some(TraceFormat::Nginx)
        );
        assert_eq!(sniff(r#"{"time":1}"#), None);
        assert_eq!(sniff("127.0.0.1 - - [17/Nov/2026:02:14:00 +0000]"), None);
    }

    #[test]
    fn rfc3339_times_count_seconds_since_the_epoch_with_their_offset() {
        assert_eq!(iso8601("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(iso8601("2000-03-01T00:00:00Z"), Some(951_868_800.0));
        assert_eq!(iso8601("2026-11-17T10:00:00.250Z"), Some(1_794_909_600.25));
        assert_eq!(
            iso8601("2026-11-17T11:00:00.250+01:00"),
            Some(1_794_909_600.25)
        );
        assert_eq!(iso8601("2026-11-17T10:00:00"), None, "a zone is required");
        assert_eq!(iso8601("2026-13-17T10:00:00Z"), None);
        assert_eq!(iso8601("2026-11-17X10:00:00Z"), None);
    }

    #[test]
    fn an_nginx_line_arrives_its_request_time_before_it_was_logged() {
        let (at, outcome) = nginx(r#"1794909600.500 "GET /stock/1 HTTP/1.1" 503 0.250"#).unwrap();
        let outcome = outcome.unwrap();
        assert!((at - 1_794_909_600.25).abs() < 1e-6);
        assert_eq!(outcome.answer, Answer::Status(503));
        assert_eq!(outcome.latency, Duration::from_millis(250));
        let (_, gave_up) = nginx(r#"1.0 "GET / HTTP/1.1" 499 1.000 extra fields"#).unwrap();
        assert_eq!(gave_up.unwrap().answer, Answer::Hang);
    }

    #[test]
    fn nginx_errors_name_the_field_and_its_column() {
        let e = nginx(r#"1.0 "GET / HTTP/1.1" 2x0 0.1"#).unwrap_err();
        assert_eq!((e.key, e.column), ("status", 22));
        let e = nginx(r#"1.0 "GET / HTTP/1.1" 200"#).unwrap_err();
        assert_eq!(e.key, "request_time");
        let e = nginx(r#"1.0 GET / HTTP/1.1 200 0.1"#).unwrap_err();
        assert_eq!((e.key, e.column), ("request", 5));
        let e = nginx(r#"1.0 "GET / HTTP/1.1" 700 0.1"#).unwrap_err();
        assert_eq!(e.key, "status");
    }

    #[test]
    fn envoy_code_0_is_a_reset_unless_the_caller_went_away() {
        let line = |code: &str, flags: &str| {
            format!(
                r#"[2026-11-17T10:00:00.100Z] "GET /stock/1 HTTP/1.1" {code} {flags} 0 12 37 36 "-" "curl" "id" "stock" "10.0.0.1:80""#
            )
        };
        let (at, ok) = envoy(&line("200", "-")).unwrap();
        let ok = ok.unwrap();
        assert!((at - 1_794_909_600.1).abs() < 1e-6);
        assert_eq!(ok.answer, Answer::Status(200));
        assert_eq!(ok.latency, Duration::from_millis(37));
        assert_eq!(
            envoy(&line("0", "UF")).unwrap().1.unwrap().answer,
            Answer::Reset
        );
        assert_eq!(
            envoy(&line("0", "UC,DC")).unwrap().1.unwrap().answer,
            Answer::Hang
        );
        assert_eq!(
            envoy(&line("504", "UT")).unwrap().1.unwrap().answer,
            Answer::Status(504)
        );
        assert_eq!(envoy(&line("20x", "-")).unwrap_err().key, "response_code");
    }

    #[test]
    fn requests_lines_replay_what_the_dependency_did_not_what_the_client_saw() {
        let answer = |line: &str| requests(line).unwrap().1.map(|o| o.answer);
        assert_eq!(
            answer(r#"{"sent_ms":5.0,"latency_ms":2.0,"status":200,"reached_dependency":1}"#),
            Some(Answer::Status(200))
        );
        assert_eq!(
            answer(
                r#"{"sent_ms":5.0,"status":200,"fallback":"static","defense_error":"status","reached_dependency":1}"#
            ),
            Some(Answer::Status(503)),
            "a fallback hid the failing status"
        );
        assert_eq!(
            answer(
                r#"{"sent_ms":5.0,"status":504,"defense_error":"timeout","reached_dependency":1}"#
            ),
            Some(Answer::Hang)
        );
        assert_eq!(
            answer(r#"{"sent_ms":5.0,"status":200,"fallback":"static","reached_dependency":0}"#),
            None,
            "rejected by the breaker: never reached the dependency"
        );
        assert_eq!(answer(r#"{"sent_ms":5.0,"client_error":"shed"}"#), None);
        assert_eq!(
            answer(r#"{"sent_ms":5.0,"client_error":"connect"}"#),
            Some(Answer::Reset)
        );
        let e = requests(r#"{"sent_ms":"x"}"#).unwrap_err();
        assert!(e.column > 1, "{e:?}");
    }

    #[test]
    fn record_lines_without_a_status_were_cut() {
        let (at, o) =
            record(r#"{"at_ms":1500.0,"proxy":"p","status":null,"latency_ms":null}"#).unwrap();
        assert_eq!(at, 1.5);
        assert_eq!(o.unwrap().answer, Answer::Reset);
    }
}
