//! The `replay` fault: the dependency answers as a recording did.
//!
//! Each request through the fault, `t` into its window, draws one recorded
//! answer from the recording's bucket at `t` (seeded): a status after the
//! recorded latency (a 2xx or 3xx is forwarded to the real upstream after
//! that delay, an error status is answered by the proxy), a reset after the
//! recorded latency, or a hang. The fault's window lasts as long as the
//! recording unless `for` says otherwise; past its end requests pass
//! through.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer};

use crate::clock::Duration;
use crate::schema::deserialize_checked;
use crate::schema::units::Dur;
use crate::trace::{Model, TraceFormat};

/// `replay` as written.
#[derive(Debug, Clone, PartialEq, Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "a mapping with file, format, bucket, cold_after, e.g. `{ file: incident.log, format: nginx }`"
)]
pub struct ReplayFields {
    /// The recording, relative to the file that names it.
    pub file: String,
    /// `requests` (a run's requests.jsonl), `record` (`firedrill proxy
    /// --record`), `nginx` (`log_format firedrill '$msec "$request" $status
    /// $request_time';`) or `envoy` (Envoy's default access log format);
    /// default: told from the recording's first line.
    #[serde(default)]
    pub format: Option<TraceFormat>,
    /// Width of the time buckets answers are drawn from (default `1s`).
    #[serde(default = "one_second")]
    pub bucket: Dur,
    /// Requests after this long without one draw from the recorded calls
    /// that came after as long a silence (a cold start); default: off.
    #[serde(default)]
    pub cold_after: Option<Dur>,
}

fn one_second() -> Dur {
    Dur(Duration::from_secs(1))
}

/// Parameters of `replay`, with the recording once it is read.
#[derive(Clone, PartialEq)]
pub struct Replay {
    /// As written.
    pub fields: ReplayFields,
    /// The recording as buckets; `None` until [`super::recordings::load_recordings`] read it.
    pub model: Option<Arc<Model>>,
}

impl fmt::Debug for Replay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Replay")
            .field("fields", &self.fields)
            .field("read", &self.model.is_some())
            .finish()
    }
}

impl TryFrom<ReplayFields> for Replay {
    type Error = String;
    fn try_from(fields: ReplayFields) -> Result<Self, String> {
        if fields.bucket.get() < Duration::from_millis(1) {
            return Err("bucket: must be at least 1ms".to_string());
        }
        if fields.cold_after.is_some_and(|c| c.get().is_zero()) {
            return Err("cold_after: must be longer than 0s".to_string());
        }
        if fields.file.trim().is_empty() {
            return Err("file: the recording's path cannot be empty".to_string());
        }
        Ok(Replay {
            fields,
            model: None,
        })
    }
}

impl crate::schema::FromFile for Replay {
    fn from_file(file: &str) -> Result<Self, String> {
        Replay::try_from(ReplayFields {
            file: file.to_string(),
            format: None,
            bucket: one_second(),
            cold_after: None,
        })
    }
}

impl<'de> Deserialize<'de> for Replay {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, ReplayFields, Replay>(d)
    }
}

crate::schema_via!(Replay, ReplayFields, "Replay");
