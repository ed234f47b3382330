//! Every request of the run, one JSON line each: what the client saw, what
//! the defense line did, and how often it reached the dependency.

use serde::Serialize;

use std::io::Write;
use std::path::Path;

use super::ms;
use crate::experiment::drill::collect::stream::RecordSink;
use crate::experiment::timeline::RequestRecord;

/// `requests.jsonl`: written while the run goes, not after it (see
/// [`Requests::file`]).
#[derive(Debug)]
pub struct Requests;

/// A request with its times in milliseconds.
#[derive(Serialize)]
struct Line<'a> {
    /// Sent, milliseconds since the start.
    sent_ms: f64,
    /// Time to the response head, milliseconds.
    latency_ms: Option<f64>,
    /// The rest, as recorded.
    #[serde(flatten)]
    record: &'a RequestRecord,
}

impl Requests {
    /// Its name in a report directory.
    pub const FILE_NAME: &'static str = "requests.jsonl";

    /// Writes every request to `path` as it becomes final. The file is
    /// created at the first request, or empty when the load ends without
    /// one: a run refused before its load (exit 3) leaves none.
    pub fn file(path: &Path) -> std::io::Result<RequestsFile> {
        Ok(RequestsFile {
            path: path.to_path_buf(),
            out: None,
        })
    }
}

/// `requests.jsonl` written as the run goes, one line per final request
/// (secret variables masked).
#[derive(Debug)]
pub struct RequestsFile {
    /// Where it goes.
    path: std::path::PathBuf,
    /// The file, once created.
    out: Option<std::io::BufWriter<std::fs::File>>,
}

impl RequestsFile {
    /// The file, created the first time.
    fn out(&mut self) -> std::io::Result<&mut std::io::BufWriter<std::fs::File>> {
        let out = match self.out.take() {
            Some(out) => out,
            None => std::io::BufWriter::new(std::fs::File::create(&self.path)?),
        };
        Ok(self.out.insert(out))
    }
}

impl RecordSink for RequestsFile {
    fn record(&mut self, record: &RequestRecord) -> std::io::Result<()> {
        let line = Line {
            sent_ms: ms(record.sent),
            latency_ms: record.latency.map(ms),
            record,
        };
        let text = serde_json::to_string(&line).map_err(std::io::Error::other)?;
        let out = self.out()?;
        out.write_all(crate::schema::vars::mask(&text).as_bytes())?;
        out.write_all(b"\n")
    }

    fn finish(&mut self) -> std::io::Result<()> {
        self.out()?.flush()
    }
}
