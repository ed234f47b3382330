//! A service's own events file, read after the drill: JSON lines, one per
//! change of its breaker's state. The plain form (`events: FILE`) reads
//! `{"at_ms": <Unix epoch ms>, "from": "closed", "to": "open"}`; the
//! mapping reads a library's own log as it is:
//!
//! ```yaml
//! events:
//!   file: logs/breaker.jsonl
//!   time: { field: t_ms, unit: ms, epoch: unix }      # default: at_ms, ms, unix
//!   state: { field: state, words: { OPEN: open, HALF_OPEN: half_open, CLOSED: closed } }
//!   skip: { field: event, unless: [state_change] }    # other lines are passed over
//! ```

use indexmap::IndexMap;
use serde::Deserialize;

use super::reported::{Change, state};
use crate::clock::Duration;
use crate::defense::breaker::State;

/// Where a service's events file is and how its lines read.
#[derive(Debug, Clone, PartialEq)]
pub struct EventsLog {
    /// The file, as written (relative to the working directory).
    pub file: String,
    /// Where a line's time is and what it counts.
    pub time: TimeField,
    /// The field holding the state a line changes to (`from` is the state
    /// before it, closed at the start), or none: `from` and `to` fields.
    pub state_field: Option<String>,
    /// The library's own state words, each one of closed, open, half_open
    /// (the usual spellings are read without them).
    pub words: IndexMap<String, State>,
    /// Lines to pass over: those whose field is not one of the values.
    pub skip: Option<Skip>,
}

/// Where a line's time is, in which unit, from when.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimeField {
    /// The field (default `at_ms`).
    #[serde(default = "at_ms")]
    pub field: String,
    /// `ms` (default), `s`, `us` (numbers), or `rfc3339` (a string such as
    /// `2026-11-17T10:00:00.123Z`).
    #[serde(default)]
    pub unit: TimeUnit,
    /// What a number counts from: `unix` (the Unix epoch, default) or
    /// `drill` (the drill's start, as every time in the report).
    #[serde(default)]
    pub epoch: Epoch,
}

fn at_ms() -> String {
    "at_ms".to_string()
}

impl Default for TimeField {
    fn default() -> Self {
        TimeField {
            field: at_ms(),
            unit: TimeUnit::default(),
            epoch: Epoch::default(),
        }
    }
}

/// The unit of a line's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TimeUnit {
    /// Milliseconds.
    #[default]
    Ms,
    /// Seconds.
    S,
    /// Microseconds.
    Us,
    /// An RFC 3339 time (with its offset), always from the Unix epoch.
    Rfc3339,
}

/// What a numeric time counts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Epoch {
    /// The Unix epoch.
    #[default]
    Unix,
    /// The drill's start.
    Drill,
}

/// Lines to pass over: every line whose `field` is not one of `unless`
/// (a line without the field too).
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Skip {
    /// The field, e.g. `event`.
    pub field: String,
    /// The values of the lines that are read, e.g. `[state_change]`.
    #[schemars(length(min = 1))]
    pub unless: Vec<String>,
}

/// A state as written in `words`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Word {
    /// Closed.
    Closed,
    /// Open.
    Open,
    /// Half-open.
    HalfOpen,
}

/// How a line says its state.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawState {
    /// The field holding the state a line changes to (the state before it
    /// is the previous line's, closed at the start); default: the line has
    /// `from` and `to`.
    #[serde(default)]
    field: Option<String>,
    /// The library's words for the states, e.g. `{ OPEN: open, HALF_OPEN:
    /// half_open, CLOSED: closed }` (closed, open, half_open and their
    /// usual spellings are read without them).
    #[serde(default)]
    words: IndexMap<String, Word>,
}

/// `events:` as a mapping.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawEventsLog {
    /// The JSON-lines file the service appends to.
    file: String,
    /// Where a line's time is: `{ field: at_ms, unit: ms, epoch: unix }`
    /// by default.
    #[serde(default)]
    time: TimeField,
    /// How a line says the state; default: `from` and `to` fields.
    #[serde(default)]
    state: Option<RawState>,
    /// Lines to pass over, e.g. `{ field: event, unless: [state_change] }`.
    #[serde(default)]
    skip: Option<Skip>,
}

impl TryFrom<RawEventsLog> for EventsLog {
    type Error = String;

    fn try_from(raw: RawEventsLog) -> Result<Self, String> {
        if raw.file.is_empty() {
            return Err("file: expected the events file's path".to_string());
        }
        if raw.time.unit == TimeUnit::Rfc3339 && raw.time.epoch == Epoch::Drill {
            return Err(
                "time.epoch: an rfc3339 time says its own date; drill applies to numbers only"
                    .to_string(),
            );
        }
        if raw.skip.as_ref().is_some_and(|s| s.unless.is_empty()) {
            return Err("skip.unless: give at least one value of the lines to read".to_string());
        }
        let state = raw.state.unwrap_or(RawState {
            field: None,
            words: IndexMap::new(),
        });
        let words = state
            .words
            .into_iter()
            .map(|(word, s)| {
                let s = match s {
                    Word::Closed => State::Closed,
                    Word::Open => State::Open,
                    Word::HalfOpen => State::HalfOpen,
                };
                (word, s)
            })
            .collect();
        Ok(EventsLog {
            file: raw.file,
            time: raw.time,
            state_field: state.field,
            words,
            skip: raw.skip,
        })
    }
}

impl<'de> Deserialize<'de> for EventsLog {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        crate::schema::deserialize_checked::<D, RawEventsLog, EventsLog>(d)
    }
}

crate::schema_via!(EventsLog, RawEventsLog, "EventsLog");

impl crate::schema::FromFile for EventsLog {
    fn from_file(file: &str) -> Result<Self, String> {
        Ok(EventsLog {
            file: file.to_string(),
            time: TimeField::default(),
            state_field: None,
            words: IndexMap::new(),
            skip: None,
        })
    }
}

/// What an events file gave: the changes, and how many lines it had and
/// passed over.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Read {
    /// The changes, on the drill's clock.
    pub changes: Vec<Change>,
    /// Lines that were not blank.
    pub lines: usize,
    /// Lines `skip` passed over.
    pub skipped: usize,
}

impl Read {
    /// Why the file reported nothing, when it did not: it was empty,
    /// every line was skipped, or its lines changed nothing.
    pub fn nothing(&self) -> Option<String> {
        if !self.changes.is_empty() {
            return None;
        }
        let why = if self.lines == 0 {
            "the file is empty".to_string()
        } else if self.skipped == self.lines {
            format!("all {} lines were skipped", self.lines)
        } else {
            format!("its {} lines changed nothing", self.lines)
        };
        Some(format!(
            "no state change in it ({why}): the service reported nothing"
        ))
    }
}

impl EventsLog {
    /// Reads the file (at most
    /// [`MAX_RECORDING_BYTES`](crate::schema::limits::MAX_RECORDING_BYTES));
    /// times are put on the drill's clock with `started_at_unix_ms`. An
    /// unreadable file or line is an error that says which (file and line);
    /// a line `skip` names is passed over.
    pub fn read(&self, started_at_unix_ms: u64) -> Result<Read, String> {
        let path = &self.file;
        let text = crate::schema::read_recording(std::path::Path::new(path), path)
            .map_err(|e| e.to_string())?;
        let mut read = Read::default();
        let mut now = State::Closed;
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            read.lines += 1;
            let bad = |what: String| format!("{path}:{}: {what}", i + 1);
            let value: serde_json::Value = serde_json::from_str(line)
                .map_err(|e| bad(format!("expected a JSON object: {e}")))?;
            if self.skipped(&value) {
                read.skipped += 1;
                continue;
            }
            let at = self.time(&value, started_at_unix_ms).map_err(bad)?;
            let (from, to) = match &self.state_field {
                Some(field) => (now, self.state_at(&value, field).map_err(bad)?),
                None => (
                    self.state_at(&value, "from").map_err(bad)?,
                    self.state_at(&value, "to").map_err(bad)?,
                ),
            };
            now = to;
            // A line that gives the state again is no change; the plain
            // form keeps every line as written.
            if self.state_field.is_none() || from != to {
                read.changes.push((at, from, to));
            }
        }
        Ok(read)
    }

    /// Whether `skip` passes over this line.
    fn skipped(&self, line: &serde_json::Value) -> bool {
        self.skip.as_ref().is_some_and(|skip| {
            line.get(&skip.field)
                .and_then(serde_json::Value::as_str)
                .is_none_or(|v| !skip.unless.iter().any(|u| u == v))
        })
    }

    /// The line's time since the drill's start (a time before it counts
    /// as the start).
    fn time(&self, line: &serde_json::Value, started_at_unix_ms: u64) -> Result<Duration, String> {
        let TimeField { field, unit, epoch } = &self.time;
        let value = line.get(field);
        let ms = match unit {
            TimeUnit::Rfc3339 => value
                .and_then(serde_json::Value::as_str)
                .and_then(crate::trace::iso8601)
                .map(|secs| secs * 1000.0)
                .ok_or_else(|| {
                    format!("{field}: expected an RFC 3339 time, e.g. `2026-11-17T10:00:00.123Z`")
                })?,
            unit => {
                let n = value
                    .and_then(serde_json::Value::as_f64)
                    .ok_or_else(|| format!("{field}: expected a number of {}", unit_name(*unit)))?;
                n * match unit {
                    TimeUnit::S => 1000.0,
                    TimeUnit::Us => 0.001,
                    _ => 1.0,
                }
            }
        };
        let since = match (unit, epoch) {
            (TimeUnit::Rfc3339, _) | (_, Epoch::Unix) => ms - started_at_unix_ms as f64,
            (_, Epoch::Drill) => ms,
        };
        Ok(Duration::from_secs_f64(since.max(0.0) / 1000.0))
    }

    /// The state in the line's `field`, in the library's words or the
    /// usual ones.
    fn state_at(&self, line: &serde_json::Value, field: &str) -> Result<State, String> {
        let word = line.get(field).and_then(serde_json::Value::as_str);
        word.and_then(|w| self.words.get(w).copied().or_else(|| state(w)))
            .ok_or_else(|| {
                let words: Vec<&str> = self.words.keys().map(String::as_str).collect();
                let also = if words.is_empty() {
                    String::new()
                } else {
                    format!(" (or one of {})", words.join(", "))
                };
                match word {
                    Some(w) => format!("{field}: `{w}`: expected closed, open or half_open{also}"),
                    None => format!("{field}: expected closed, open or half_open{also}"),
                }
            })
    }
}

/// `milliseconds`, `seconds`, `microseconds`.
fn unit_name(unit: TimeUnit) -> &'static str {
    match unit {
        TimeUnit::S => "seconds",
        TimeUnit::Us => "microseconds",
        TimeUnit::Ms | TimeUnit::Rfc3339 => "milliseconds",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mapping `yaml` as an experiment would read it.
    fn log(yaml: &str) -> Result<EventsLog, String> {
        serde_yaml_ng::from_str(yaml).map_err(|e| e.to_string())
    }

    /// `lines` written to a file and read through `yaml` (with `FILE` in
    /// it replaced by the file's path), the drill started at Unix 1000 s.
    fn read(yaml: &str, lines: &str) -> Result<Read, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("log.jsonl");
        std::fs::write(&file, lines).unwrap();
        log(&yaml.replace("FILE", file.to_str().unwrap()))?.read(1_000_000)
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn seconds_microseconds_and_rfc3339_times_land_on_the_drills_clock() {
        let line = |t: &str| format!("{{\"t\": {t}, \"from\": \"closed\", \"to\": \"open\"}}\n");
        for (unit, t) in [
            ("s", "1000.5".to_string()),
            ("us", "1000500000".to_string()),
            ("rfc3339", "\"1970-01-01T00:16:40.500Z\"".to_string()),
            ("rfc3339", "\"1970-01-01T01:16:40.500+01:00\"".to_string()),
        ] {
            let yaml = format!("{{ file: FILE, time: {{ field: t, unit: {unit} }} }}");
            let got = read(&yaml, &line(&t)).unwrap().changes;
            assert_eq!(got, [(ms(500), State::Closed, State::Open)], "{unit} {t}");
        }
    }

    #[test]
    fn drill_epoch_times_already_count_from_the_drills_start() {
        let got = read(
            "{ file: FILE, time: { field: t, unit: s, epoch: drill } }",
            "{\"t\": 2.25, \"from\": \"open\", \"to\": \"half_open\"}\n",
        )
        .unwrap();
        assert_eq!(got.changes, [(ms(2250), State::Open, State::HalfOpen)]);
    }

    #[test]
    fn a_state_field_gives_the_new_state_and_repeating_it_is_no_change() {
        let got = read(
            "{ file: FILE, state: { field: s, words: { TRIPPED: open } } }",
            "{\"at_ms\": 1000100, \"s\": \"TRIPPED\"}\n\
             {\"at_ms\": 1000200, \"s\": \"TRIPPED\"}\n\
             {\"at_ms\": 1000300, \"s\": \"halfOpen\"}\n",
        )
        .unwrap();
        assert_eq!(
            got.changes,
            [
                (ms(100), State::Closed, State::Open),
                (ms(300), State::Open, State::HalfOpen),
            ]
        );
        assert_eq!(got.nothing(), None);
    }

    #[test]
    fn skipped_lines_are_counted_and_a_log_of_only_skipped_lines_says_so() {
        let got = read(
            "{ file: FILE, skip: { field: event, unless: [state_change] } }",
            "{\"event\": \"success\"}\nnot even json? no: {}\n",
        );
        assert!(
            got.unwrap_err().ends_with(
                "log.jsonl:2: expected a JSON object: expected ident at line 1 column 2"
            ),
            "a line that is not JSON is an error, even with skip"
        );
        let got = read(
            "{ file: FILE, skip: { field: event, unless: [state_change] } }",
            "{\"event\": \"success\"}\n{\"latency\": 3}\n",
        )
        .unwrap();
        assert_eq!((got.lines, got.skipped), (2, 2));
        assert_eq!(
            got.nothing().as_deref(),
            Some("no state change in it (all 2 lines were skipped): the service reported nothing")
        );
    }

    #[test]
    fn an_events_log_over_the_limit_or_endless_is_refused_naming_it_and_the_limit() {
        use crate::schema::limits::MAX_RECORDING_BYTES;
        let dir = tempfile::tempdir().unwrap();
        let large = dir.path().join("large.jsonl");
        // Sparse: one byte over the limit without writing it.
        std::fs::File::create(&large)
            .unwrap()
            .set_len(MAX_RECORDING_BYTES + 1)
            .unwrap();
        let limit = format!("expected at most {MAX_RECORDING_BYTES} bytes (256 MiB)");
        let large = large.to_str().unwrap();
        let err = log(&format!("{{ file: {large} }}"))
            .unwrap()
            .read(0)
            .unwrap_err();
        assert_eq!(
            err,
            format!(
                "{large}:1:1: the file is {} bytes: {limit}",
                MAX_RECORDING_BYTES + 1
            )
        );
        let err = log("{ file: /dev/zero }").unwrap().read(0).unwrap_err();
        assert_eq!(
            err,
            format!("/dev/zero:1:1: the file is more than {MAX_RECORDING_BYTES} bytes: {limit}")
        );
    }

    #[test]
    fn a_line_the_mapping_cannot_read_names_the_file_line_and_field() {
        let err = read(
            "{ file: FILE, time: { field: t_ms }, state: { field: state } }",
            "{\"t_ms\": \"soon\", \"state\": \"OPEN\"}\n",
        )
        .unwrap_err();
        assert!(
            err.ends_with("log.jsonl:1: t_ms: expected a number of milliseconds"),
            "{err}"
        );
        let err = read(
            "{ file: FILE, state: { field: state, words: { TRIPPED: open } } }",
            "{\"at_ms\": 1, \"state\": \"ajar\"}\n",
        )
        .unwrap_err();
        assert!(
            err.ends_with(
                "log.jsonl:1: state: `ajar`: expected closed, open or half_open (or one of TRIPPED)"
            ),
            "{err}"
        );
    }

    #[test]
    fn bad_keys_of_the_mapping_are_refused() {
        for (yaml, want) in [
            (
                "{ file: f, time: { unit: minutes } }",
                "unknown variant `minutes`",
            ),
            (
                "{ file: f, time: { epoch: boot } }",
                "unknown variant `boot`",
            ),
            (
                "{ file: f, state: { words: { X: ajar } } }",
                "unknown variant `ajar`",
            ),
            (
                "{ file: f, skip: { field: event } }",
                "missing field `unless`",
            ),
            (
                "{ file: f, skip: { field: event, unless: [] } }",
                "skip.unless: give at least one value",
            ),
            (
                "{ file: f, time: { unit: rfc3339, epoch: drill } }",
                "time.epoch: an rfc3339 time says its own date",
            ),
            ("{ file: f, colour: red }", "unknown field `colour`"),
            ("{ time: { unit: s } }", "missing field `file`"),
        ] {
            let err = log(yaml).unwrap_err();
            assert!(err.contains(want), "{yaml}: {err}");
        }
    }
}
