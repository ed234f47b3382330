//! Live control of a game day run by people (`firedrill run --control
//! ADDR`): start and stop the faults declared `at: manual`, halt the drill
//! (faults removed, partial report), and read the live status as JSON.
//!
//! ```text
//! GET  /status               the run now: elapsed, faults, routes, breakers
//! POST /faults/NAME/start    opens a manual fault's window (for its `for`, if any)
//! POST /faults/NAME/stop     closes it
//! POST /halt                 ends the drill as a halt: faults removed, partial report, exit 1
//! ```
//!
//! The same rules as `firedrill server`: browsers are refused, a token
//! (`--control-token`) is required when given, and anything but loopback
//! needs one.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::api::error::ApiError;
use crate::api::guard::Guard;
use crate::clock::{self, Duration, Instant};
use crate::defense::breaker::millis;
use crate::experiment::config::Experiment;
use crate::experiment::drill::collect::stream::ManualFaults;
use crate::experiment::drill::stand_up::RunningDependency;
use crate::fault::{Fault, FaultPlan, Window};
use crate::http::body::{BoxBody, full};

/// Per manual fault, its windows: start, and end once stopped (or set by
/// its `for`).
type Spans = BTreeMap<String, Vec<(Duration, Option<Duration>)>>;

/// The control endpoint's state for one run.
pub struct Control {
    /// Time zero of the run.
    start: Instant,
    /// Per manual fault: the plans that apply it (one per instance of the
    /// built-in target it applies on) and the fault as declared.
    manual: BTreeMap<String, (Vec<Arc<FaultPlan>>, Fault)>,
    /// Per manual fault: its windows so far; the last one open while active.
    log: Mutex<Spans>,
    /// Set to `true` by `POST /halt`.
    halt: watch::Sender<bool>,
}

impl std::fmt::Debug for Control {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Control")
            .field("manual", &self.manual.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Control {
    /// Control over the manual faults of `experiment`, each applied by the
    /// plan of its dependency, or by the target's plans when it names none:
    /// every instance's, or its `instance:`'s only.
    pub fn new(
        experiment: &Experiment,
        dependencies: &[RunningDependency],
        start: Instant,
    ) -> Control {
        let manual = experiment
            .faults
            .iter()
            .filter(|f| f.manual)
            .filter_map(|f| {
                let plans: Vec<Arc<FaultPlan>> = dependencies
                    .iter()
                    .filter(|d| match &f.dependency {
                        Some(name) => &d.name == name,
                        None => crate::experiment::config::instances::applies_on(
                            f,
                            d.instance.as_deref(),
                        ),
                    })
                    .map(|d| d.plan.clone())
                    .collect();
                (!plans.is_empty()).then(|| (f.name.clone(), (plans, f.clone())))
            })
            .collect();
        Control {
            start,
            manual,
            log: Mutex::new(BTreeMap::new()),
            halt: watch::Sender::new(false),
        }
    }

    fn elapsed(&self) -> Duration {
        clock::now().saturating_duration_since(self.start)
    }

    fn log(&self) -> std::sync::MutexGuard<'_, Spans> {
        self.log.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The manual faults active now (a window with a `for` closes by
    /// itself).
    pub fn active(&self) -> Vec<String> {
        let now = self.elapsed();
        self.log()
            .iter()
            .filter(|(_, spans)| {
                spans
                    .last()
                    .is_some_and(|(from, to)| to.is_none_or(|t| now < t) && *from <= now)
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn manual_fault(&self, name: &str) -> Result<&(Vec<Arc<FaultPlan>>, Fault), ApiError> {
        self.manual.get(name).ok_or_else(|| {
            let names: Vec<&str> = self.manual.keys().map(String::as_str).collect();
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no manual fault named `{name}`; manual faults (at: manual): {}",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            )
        })
    }

    /// Opens a manual fault's window now.
    pub fn start_fault(&self, name: &str) -> Result<Value, ApiError> {
        let (plans, declared) = self.manual_fault(name)?;
        if self.active().iter().any(|a| a == name) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("`{name}` is already active"),
            ));
        }
        let now = self.elapsed();
        let mut fault = declared.clone();
        let window = &declared.window;
        fault.window = Window {
            start: now,
            length: window.length,
            pattern: window.pattern,
        };
        for plan in plans {
            let mut faults = plan.without(name);
            faults.push(fault.clone());
            plan.replace(faults);
        }
        let end = window.length.map(|l| now + l);
        self.log()
            .entry(name.to_string())
            .or_default()
            .push((now, end));
        tracing::info!(fault = name, at = ?now, "manual fault started");
        Ok(json!({ "fault": name, "active": true, "started_ms": millis(now) }))
    }

    /// Closes a manual fault's window now.
    pub fn stop_fault(&self, name: &str) -> Result<Value, ApiError> {
        let (plans, _) = self.manual_fault(name)?;
        if !self.active().iter().any(|a| a == name) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!("`{name}` is not active"),
            ));
        }
        let now = self.elapsed();
        for plan in plans {
            plan.remove_named(name);
        }
        if let Some(last) = self.log().get_mut(name).and_then(|spans| spans.last_mut()) {
            last.1 = Some(now);
        }
        tracing::info!(fault = name, at = ?now, "manual fault stopped");
        Ok(json!({ "fault": name, "active": false, "stopped_ms": millis(now) }))
    }

    /// The names of the manual faults.
    pub fn manual_names(&self) -> impl Iterator<Item = &str> {
        self.manual.keys().map(String::as_str)
    }

    /// Asks the run to halt.
    pub fn request_halt(&self) {
        self.halt.send_replace(true);
    }

    /// Resolves once a halt was asked for.
    pub async fn halted(&self) {
        let mut rx = self.halt.subscribe();
        let _ = rx.wait_for(|h| *h).await;
    }

    /// Each manual fault's windows, the open one closed at `end`.
    pub fn windows(&self, end: Duration) -> BTreeMap<String, Vec<(Duration, Duration)>> {
        self.log()
            .iter()
            .map(|(name, spans)| {
                let closed = spans
                    .iter()
                    .map(|(from, to)| (*from, to.unwrap_or(end).min(end)))
                    .filter(|(from, to)| from < to)
                    .collect();
                (name.clone(), closed)
            })
            .collect()
    }
}

impl ManualFaults for Control {
    fn windows(&self, end: Duration) -> BTreeMap<String, Vec<(Duration, Duration)>> {
        Control::windows(self, end)
    }
}

/// What `GET /status` answers: the run now, as JSON (the live view,
/// [`crate::experiment::drill::drive::progress::Status`], provides it).
pub type StatusFn = Arc<dyn Fn() -> Value + Send + Sync>;

/// Answers one control request.
pub async fn handle(
    control: Arc<Control>,
    status: StatusFn,
    guard: Guard,
    req: Request<Incoming>,
) -> Response<BoxBody> {
    let (parts, body) = req.into_parts();
    let answer = async {
        guard.admit(&parts)?;
        guard.body(&parts, body).await?;
        route(&control, &status, &parts.method, parts.uri.path())
    }
    .await;
    let (code, value) = match answer {
        Ok(value) => (StatusCode::OK, value),
        Err(e) => (
            e.status,
            json!({ "error": e.message, "status": e.status.as_u16() }),
        ),
    };
    let mut resp = Response::new(full(Bytes::from(format!("{value}\n"))));
    *resp.status_mut() = code;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

fn route(
    control: &Control,
    status: &StatusFn,
    method: &Method,
    path: &str,
) -> Result<Value, ApiError> {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let not_allowed = || {
        ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} {path}: see GET /status, POST /faults/NAME/start|stop, POST /halt"),
        )
    };
    match segments.as_slice() {
        ["status"] if method == Method::GET => Ok(status()),
        ["faults", name, action] if method == Method::POST => {
            let name = crate::api::routes::decode_segment(name)?;
            match *action {
                "start" => control.start_fault(&name),
                "stop" => control.stop_fault(&name),
                _ => Err(not_allowed()),
            }
        }
        ["halt"] if method == Method::POST => {
            control.request_halt();
            Ok(json!({ "halting": true }))
        }
        ["status"] | ["halt"] | ["faults", _, _] => Err(not_allowed()),
        _ => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("{path}: see GET /status, POST /faults/NAME/start|stop, POST /halt"),
        )),
    }
}

/// Serves the control endpoint on `acceptor` until `shutdown`.
pub async fn serve<A: crate::net::Acceptor>(
    acceptor: A,
    control: Arc<Control>,
    status: StatusFn,
    guard: Guard,
    shutdown: crate::http::ShutdownSignal,
) -> std::io::Result<()> {
    let answer = move |req| handle(control.clone(), status.clone(), guard.clone(), req);
    crate::http::serve_answers(acceptor, answer, shutdown).await
}
