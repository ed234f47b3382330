//! `report.html`: the drill as one self-contained page — fault windows,
//! breaker states, what callers got per second, the expectations (each
//! marking the time it judged) and the transition journal.
//!
//! The page is drawn from the report's own files, so `firedrill report DIR`
//! draws it again after the run: [`picture`] reads them (or the same data
//! in memory) into per-second buckets, [`page`] writes HTML and SVG.

pub mod page;
pub mod picture;
pub mod sweep_page;

use std::path::{Path, PathBuf};

use picture::{Arrival, Facts, Picture, SentRequest};

use super::{Exporter, RunReport};

/// `report.html`.
#[derive(Debug)]
pub struct Html;

impl Exporter for Html {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, report: &RunReport) -> std::io::Result<Vec<u8>> {
        let facts: Facts = serde_json::to_value(report)
            .and_then(serde_json::from_value)
            .map_err(std::io::Error::other)?;
        let mut fold = report.fold.clone();
        report.timeline.each_dependency_request(&mut |r| {
            fold.arrival(Arrival {
                at_ms: r.at_ms,
                proxy: r.proxy.to_string(),
                reached_upstream: r.reached_upstream,
            });
        });
        let picture = fold.picture(facts);
        Ok(page::render(&picture).into_bytes())
    }
}

/// Why a report directory could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum DrawError {
    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file's content is not what firedrill writes there.
    #[error("{}:{line}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The line (1 for report.json's first error line as serde gives it).
        line: usize,
        /// The cause.
        #[source]
        source: serde_json::Error,
    },
}

/// Reads JSON lines from `path` (none when the file does not exist).
fn lines<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, DrawError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(DrawError::Io {
                path: path.to_path_buf(),
                source,
            });
        }
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| DrawError::Json {
                path: path.to_path_buf(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

/// Draws `DIR/report.html` again from `DIR/report.json`,
/// `DIR/requests.jsonl` and `DIR/dependencies.jsonl` (the last two may be
/// missing). Returns the page's path.
pub fn draw_dir(dir: &Path) -> Result<PathBuf, DrawError> {
    let report = dir.join("report.json");
    let text = std::fs::read_to_string(&report).map_err(|source| DrawError::Io {
        path: report.clone(),
        source,
    })?;
    let facts: Facts = serde_json::from_str(&text).map_err(|source| DrawError::Json {
        path: report.clone(),
        line: source.line(),
        source,
    })?;
    let requests: Vec<SentRequest> = lines(&dir.join("requests.jsonl"))?;
    let arrivals: Vec<Arrival> = lines(&dir.join("dependencies.jsonl"))?;
    let page = page::render(&Picture::new(facts, requests, arrivals));
    let out = dir.join("report.html");
    std::fs::write(&out, page).map_err(|source| DrawError::Io {
        path: out.clone(),
        source,
    })?;
    Ok(out)
}
