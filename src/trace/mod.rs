//! Recorded traffic read back: a dependency's answers and a client's
//! arrival times, from firedrill's own JSON lines or from NGINX and Envoy
//! access logs.
//!
//! A [`Trace`] is the recording as lines in arrival order, times counted
//! from its first arrival. The `replay` fault turns it into a [`Model`]: per
//! time bucket, the recorded answers to draw from (status mix, latency,
//! connection errors and hangs together, so their joint distribution is
//! kept); `load: replay` sends requests at its arrival times.

mod formats;
mod model;

use std::path::Path;

pub use formats::TraceFormat;
pub(crate) use formats::iso8601;
pub use model::{Gap, Model};

use crate::clock::Duration;
use crate::schema::{LoadError, SchemaError, Segment};

/// How the recorded request ended, as the dependency answered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A response with this status.
    Status(u16),
    /// The connection was reset or refused before a response.
    Reset,
    /// No answer: the caller gave up first (a timeout, NGINX 499).
    Hang,
}

/// One recorded answer: what came back and how long it took.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// What came back.
    pub answer: Answer,
    /// From arrival to the answer (for a hang: how long the caller waited).
    pub latency: Duration,
}

/// One recorded request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceLine {
    /// Arrival, from the trace's start (see [`Trace`]).
    pub at: Duration,
    /// How it ended at the dependency; `None` when it never reached it
    /// (rejected, shed): still an arrival.
    pub outcome: Option<Outcome>,
    /// The line of the file it came from (1-based).
    pub source_line: usize,
}

/// A recording, read and checked: times count from the first arrival
/// (access logs) or from the recorded run's start (firedrill's files).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    /// The file as the user named it.
    pub file: String,
    /// The requests, in arrival order.
    pub lines: Vec<TraceLine>,
}

/// Where to report a problem with the recording named at `at` (a `file`
/// key): there, or at its parent for the short form `replay: FILE`.
pub fn file_key<'a>(text: &str, at: &'a [Segment]) -> &'a [Segment] {
    match at.split_last() {
        Some((_, parent)) if crate::schema::locate(text, at).is_none() => parent,
        _ => at,
    }
}

/// Longest trace line read (a longer one is an error, not a slow read).
const MAX_LINE: usize = 64 * 1024;

impl Trace {
    /// Reads `path` (shown to the user as `shown`) in `format`, at most
    /// [`MAX_RECORDING_BYTES`](crate::schema::limits::MAX_RECORDING_BYTES)
    /// of a regular file or a device (a directory or a FIFO is refused).
    /// Empty lines and lines starting with `#` are skipped; any other line
    /// that does not parse is an error located at its line and column.
    pub fn read(path: &Path, shown: &str, format: Option<TraceFormat>) -> Result<Trace, LoadError> {
        let text = crate::schema::read_recording(path, shown)?;
        Trace::parse(shown, &text, format).map_err(LoadError::from)
    }

    /// Reads the recording `relative` names, relative to the directory of
    /// `file` (whose text is `text`) that names it at `at`. An error is
    /// located at that key, and a bad line also at its line and column in
    /// the recording.
    pub fn read_named(
        file: &str,
        text: &str,
        at: &[Segment],
        relative: &str,
        format: Option<TraceFormat>,
    ) -> Result<Trace, LoadError> {
        let at = file_key(text, at);
        let base = Path::new(file).parent().unwrap_or(Path::new(""));
        let path = base.join(relative);
        let shown = path.display().to_string();
        Trace::read(&path, &shown, format).map_err(|e| match e {
            LoadError::Read { source, .. } => {
                SchemaError::at(file, text, at, format!("cannot read {shown}: {source}")).into()
            }
            other => SchemaError::at(file, text, at, other.to_string()).into(),
        })
    }

    /// Parses a trace's text in `format`, or in the format its first line
    /// is written in.
    pub fn parse(
        file: &str,
        text: &str,
        format: Option<TraceFormat>,
    ) -> Result<Trace, SchemaError> {
        let first = text
            .lines()
            .enumerate()
            .find(|(_, l)| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        let format = match (format, first) {
            (Some(format), _) => format,
            (None, Some((i, line))) => TraceFormat::sniff(line).ok_or_else(|| SchemaError {
                file: file.to_string(),
                line: i + 1,
                column: 1,
                key: String::new(),
                message: "cannot tell the recording's format from this line: give `format` (requests, record, nginx or envoy)".to_string(),
            })?,
            (None, None) => TraceFormat::Nginx,
        };
        let mut stamped: Vec<(f64, Option<Outcome>, usize)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let number = i + 1;
            let at = |column: usize, key: &str, message: String| SchemaError {
                file: file.to_string(),
                line: number,
                column,
                key: key.to_string(),
                message,
            };
            if line.len() > MAX_LINE {
                return Err(at(1, "", format!("line longer than {MAX_LINE} bytes")));
            }
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let parsed = formats::parse_line(format, line).map_err(|e| {
                at(
                    e.column,
                    e.key,
                    format!("{} ({} format)", e.message, format),
                )
            })?;
            stamped.push((parsed.0, parsed.1, number));
        }
        if stamped.is_empty() {
            return Err(SchemaError {
                file: file.to_string(),
                line: 1,
                column: 1,
                key: String::new(),
                message: format!("no requests in this {format} trace"),
            });
        }
        // Access logs are written as requests end: order by arrival.
        stamped.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Access logs carry wall-clock times: the replay starts at the
        // first arrival. firedrill's own files count from their run's start.
        let first = if format.wall_clock() {
            stamped[0].0
        } else {
            0.0
        };
        let lines = stamped
            .into_iter()
            .map(|(start, outcome, source_line)| TraceLine {
                // Recordings carry at most microseconds; rounding keeps
                // `0.999999` from standing for a logged `1.000`.
                at: Duration::from_micros(((start - first).max(0.0) * 1e6).round() as u64),
                outcome,
                source_line,
            })
            .collect();
        Ok(Trace {
            file: file.to_string(),
            lines,
        })
    }

    /// The arrivals, from the first one.
    pub fn arrivals(&self) -> impl Iterator<Item = Duration> + '_ {
        self.lines.iter().map(|l| l.at)
    }

    /// The requests that reached the dependency, with their answers.
    pub fn answered(&self) -> impl Iterator<Item = (Duration, Outcome)> + '_ {
        self.lines.iter().filter_map(|l| Some((l.at, l.outcome?)))
    }
}
