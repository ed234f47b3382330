//! Locust as the drill's load (`load: { locust: ... }`): a master (and its
//! local workers) started before the drill's clock, idle until the drill
//! starts it at 0 s through the master's web API and stops it at the end;
//! each request's caller outcome comes back through ci/locust's hook (one
//! JSON line each in a file the master appends to) and goes into the stream
//! as the built-in load's requests do, read with the same success and
//! fallback rules.

use std::collections::BTreeMap;
use std::io::{BufRead, Seek};
use std::path::PathBuf;
use std::sync::Mutex;

use http::Method;

use crate::agent::AgentClient;
use crate::clock::{self, Duration, Instant};
use crate::defense::fallback::FallbackKind;
use crate::experiment::blackbox::classify::FallbackRule;
use crate::experiment::config::locust::LocustSpec;
use crate::experiment::config::{Experiment, LoadRoute};
use crate::experiment::drill::collect::stream::Stream;
use crate::experiment::error::RunError;
use crate::experiment::timeline::{ClientError, RequestRecord};

/// The hook, as ci/locust ships it: written beside the run's files and
/// loaded after the user's locustfile.
const HOOK: &str = include_str!("../../../ci/locust/firedrill_hook.py");

/// How often the outcomes file is read while Locust runs.
const READ_EVERY: Duration = Duration::from_millis(500);

/// How long the outcomes file must stay still after the stop before the
/// last outcomes count as in (workers ship theirs every half second).
const SETTLED: Duration = Duration::from_millis(1500);

/// The longest wait for the last outcomes after the stop.
const LAST_OUTCOMES: Duration = Duration::from_secs(10);

/// One request as the hook sends it.
#[derive(Debug, serde::Deserialize)]
struct Outcome {
    /// The id the hook gave it (in its correlation headers).
    id: Option<u64>,
    /// When it started, seconds since the Unix epoch (the worker's clock).
    start: Option<f64>,
    /// Locust's request name: the route.
    name: String,
    /// The whole URL.
    url: Option<String>,
    /// The status, if an answer came.
    status: Option<u16>,
    /// Locust's response time.
    latency_ms: f64,
    /// Why no answer came.
    error: Option<String>,
    /// The response headers the routes' fallback rules read.
    #[serde(default)]
    headers: BTreeMap<String, String>,
    /// The response body, when a fallback rule reads it.
    body: Option<String>,
}

/// Locust's processes and what the drill has read of their outcomes.
pub struct Swarm {
    /// The master, then the local workers; killed on drop.
    processes: Mutex<Vec<tokio::process::Child>>,
    /// The master's web API.
    web: AgentClient,
    /// The run's folder (the hook, the outcomes, the logs); removed on drop.
    dir: PathBuf,
    /// Where the master appends the outcomes.
    outcomes: PathBuf,
    /// How far the outcomes file has been read, in bytes.
    read: Mutex<u64>,
    /// Users and their spawn rate.
    spec: LocustSpec,
    /// The service's URL (Locust's host).
    host: String,
    /// Requests whose name is no route, by name.
    unrouted: Mutex<BTreeMap<String, u64>>,
    /// The next id for a request the hook gave none.
    next_id: Mutex<u64>,
    /// Outcomes read from the hook, routed or not.
    received: Mutex<u64>,
    /// What the drill lost of Locust's outcomes, once the run is over:
    /// requests Locust counted that no outcome came for.
    lost: Mutex<Option<String>>,
}

impl std::fmt::Debug for Swarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Swarm")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Drop for Swarm {
    fn drop(&mut self) {
        for process in self.processes.get_mut().unwrap_or_else(|e| e.into_inner()) {
            let _ = process.start_kill();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Why Locust did not come up, at `load.locust`.
fn refused(message: String) -> RunError {
    RunError::At {
        key: "load.locust".to_string(),
        message,
    }
}

/// A free loopback port.
fn free_port() -> Result<u16, RunError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(RunError::Listen)
}

impl Swarm {
    /// Starts the master and the local workers, and waits until every
    /// worker (local and remote) has joined: before the drill's clock, so
    /// the load starts at its 0 s.
    pub async fn ready(spec: &LocustSpec, experiment: &Experiment) -> Result<Swarm, RunError> {
        let host = experiment
            .system
            .as_ref()
            .map(|s| s.service.endpoint.url())
            .unwrap_or_default();
        let dir = std::env::temp_dir().join(format!(
            "firedrill-locust-{}-{}",
            std::process::id(),
            clock::unix_micros()
        ));
        std::fs::create_dir_all(&dir).map_err(RunError::Records)?;
        let hook = dir.join("firedrill_hook.py");
        std::fs::write(&hook, HOOK).map_err(RunError::Records)?;
        let outcomes = dir.join("outcomes.jsonl");
        std::fs::File::create(&outcomes).map_err(RunError::Records)?;
        let files = format!("{},{}", spec.locustfile_path.display(), hook.display());
        let env = hook_env(experiment, &outcomes);
        let (web_port, master_port) = (free_port()?, free_port()?);
        let distributed = spec.workers + spec.remote_workers > 0;
        let mut master = vec![
            "-f".to_string(),
            files.clone(),
            "--web-host".to_string(),
            "127.0.0.1".to_string(),
            "--web-port".to_string(),
            web_port.to_string(),
            "-H".to_string(),
            host.clone(),
            "--loglevel".to_string(),
            "WARNING".to_string(),
        ];
        if distributed {
            // Remote workers join from other machines: every interface.
            let bind = if spec.remote_workers > 0 {
                "*"
            } else {
                "127.0.0.1"
            };
            master.extend(
                ["--master", "--master-bind-host", bind, "--master-bind-port"].map(str::to_string),
            );
            master.push(master_port.to_string());
        }
        let spawn = |args: &[String], log: &str| {
            let log = std::fs::File::create(dir.join(log)).map_err(RunError::Records)?;
            let err = log.try_clone().map_err(RunError::Records)?;
            tokio::process::Command::new(&spec.program)
                .args(args)
                .envs(env.iter().cloned())
                .stdin(std::process::Stdio::null())
                .stdout(log)
                .stderr(err)
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| {
                    refused(format!(
                        "cannot start `{}`: {e} (set load.locust.program to the locust command)",
                        spec.program
                    ))
                })
        };
        let mut processes = vec![spawn(&master, "master.log")?];
        let worker = [
            "-f",
            &files,
            "--worker",
            "--master-host",
            "127.0.0.1",
            "--master-port",
            &master_port.to_string(),
            "--loglevel",
            "WARNING",
        ]
        .map(str::to_string);
        for i in 0..spec.workers {
            processes.push(spawn(&worker, &format!("worker-{i}.log"))?);
        }
        let addr = format!("127.0.0.1:{web_port}");
        let web = AgentClient::new(&format!("http://{addr}"), None, None, clock::now())
            .await
            .map_err(|e| refused(e.0))?;
        let swarm = Swarm {
            processes: Mutex::new(processes),
            web,
            dir,
            outcomes,
            read: Mutex::new(0),
            spec: spec.clone(),
            host,
            unrouted: Mutex::default(),
            next_id: Mutex::new(1 << 62),
            received: Mutex::default(),
            lost: Mutex::default(),
        };
        swarm.wait_ready(distributed).await?;
        Ok(swarm)
    }

    /// Polls the master until its web API answers and every worker joined.
    async fn wait_ready(&self, distributed: bool) -> Result<(), RunError> {
        let wanted = self.spec.workers + self.spec.remote_workers;
        let deadline = clock::now() + self.spec.ready_within;
        let mut seen = "the master's web API did not answer".to_string();
        while clock::now() < deadline {
            if let Some(exited) = self.exited() {
                return Err(refused(exited));
            }
            let path = if distributed { "/worker-count" } else { "/" };
            if let Ok(answer) = self.web.call(Method::GET, path, None).await {
                if !distributed && answer.status.is_success() {
                    return Ok(());
                }
                let count = answer
                    .json::<serde_json::Value>()
                    .ok()
                    .and_then(|v| v["worker_count"].as_u64());
                if count.is_some_and(|c| c >= u64::from(wanted)) {
                    return Ok(());
                }
                seen = format!("{} of {wanted} workers joined", count.unwrap_or(0));
            }
            clock::sleep(Duration::from_millis(200)).await;
        }
        Err(refused(format!(
            "Locust was not ready within {}: {seen}{}",
            crate::schema::units::Dur(self.spec.ready_within),
            self.log_tail()
        )))
    }

    /// A process that ended already, said with its log's end.
    fn exited(&self) -> Option<String> {
        let mut processes = self.processes.lock().unwrap_or_else(|e| e.into_inner());
        let (i, status) = processes
            .iter_mut()
            .enumerate()
            .find_map(|(i, p)| Some((i, p.try_wait().ok()??)))?;
        let which = if i == 0 {
            "the master".to_string()
        } else {
            format!("worker {}", i - 1)
        };
        drop(processes);
        Some(format!("{which} exited ({status}){}", self.log_tail()))
    }

    /// The last lines of the master's log, for an error.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("master.log")).unwrap_or_default();
        let lines: Vec<&str> = log.lines().rev().take(5).collect();
        if lines.is_empty() {
            return String::new();
        }
        let tail: Vec<&str> = lines.into_iter().rev().collect();
        format!("; its log ends: {}", tail.join(" | "))
    }

    /// Starts the users at the drill's start, feeds each outcome into
    /// `stream` as it comes, stops the users at `duration` and waits for
    /// the last outcomes.
    pub async fn drive(
        &self,
        routes: &[LoadRoute],
        stream: &Stream,
        start: Instant,
        started_unix_ms: u64,
        duration: Duration,
    ) {
        let form = format!(
            "user_count={}&spawn_rate={}&host={}",
            self.spec.users,
            self.spec.spawn_rate,
            crate::http::escape_unreserved(&self.host)
        );
        let form = ("application/x-www-form-urlencoded", form);
        if let Err(e) = self.web.send(Method::POST, "/swarm", Some(form)).await {
            tracing::warn!(%e, "Locust did not start its users");
        }
        let end = start + duration;
        while clock::now() < end {
            clock::sleep(READ_EVERY.min(end.saturating_duration_since(clock::now()))).await;
            self.feed(routes, stream, started_unix_ms);
        }
        let _ = self.web.send(Method::POST, "/stop", None).await;
        // The workers ship their last outcomes as they stop.
        let waited = clock::now();
        let mut still_since = clock::now();
        while clock::now().saturating_duration_since(waited) < LAST_OUTCOMES
            && clock::now().saturating_duration_since(still_since) < SETTLED
        {
            clock::sleep(Duration::from_millis(250)).await;
            if self.feed(routes, stream, started_unix_ms) > 0 {
                still_since = clock::now();
            }
        }
        self.count_lost().await;
    }

    /// Compares the requests Locust's master counted (every worker's
    /// statistics) with the outcomes that came back through the hook: a
    /// request counted with no outcome was lost on the way, and the
    /// verdicts cannot rest on what is left.
    async fn count_lost(&self) {
        #[derive(serde::Deserialize)]
        struct Stats {
            stats: Vec<Entry>,
        }
        #[derive(serde::Deserialize)]
        struct Entry {
            num_requests: u64,
        }
        let counted = match self
            .web
            .send(Method::GET, "/stats/requests", None)
            .await
            .and_then(|a| a.json::<Stats>())
        {
            // The last entry is Locust's total over every name.
            Ok(stats) => stats.stats.last().map_or(0, |e| e.num_requests),
            Err(e) => {
                tracing::warn!(%e, "Locust's statistics could not be read");
                return;
            }
        };
        let received = *self.received.lock().unwrap_or_else(|e| e.into_inner());
        if counted > received {
            *self.lost.lock().unwrap_or_else(|e| e.into_inner()) = Some(format!(
                "Locust counted {counted} requests and its workers sent the drill {received} outcomes: {} lost on the way",
                counted - received
            ));
        }
    }

    /// What the drill lost of Locust's outcomes (see [`Swarm::drive`]).
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Stops every process now (an interrupt, a halt).
    pub fn halt(&self) {
        for process in self
            .processes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter_mut()
        {
            let _ = process.start_kill();
        }
    }

    /// Reads the outcomes appended since the last read into `stream`;
    /// how many.
    fn feed(&self, routes: &[LoadRoute], stream: &Stream, started_unix_ms: u64) -> usize {
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        let Ok(mut file) = std::fs::File::open(&self.outcomes) else {
            return 0;
        };
        if file.seek(std::io::SeekFrom::Start(*read)).is_err() {
            return 0;
        }
        let mut reader = std::io::BufReader::new(file);
        let mut fed = 0;
        let mut line = String::new();
        // Only whole lines: one being written is read next time.
        while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.ends_with('\n') {
            *read += line.len() as u64;
            if let Ok(outcome) = serde_json::from_str::<Outcome>(&line) {
                *self.received.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                match self.record(&outcome, routes, started_unix_ms) {
                    Some(record) => {
                        stream.sent(record.clone());
                        stream.finished(record);
                        fed += 1;
                    }
                    None => {
                        let mut unrouted = self.unrouted.lock().unwrap_or_else(|e| e.into_inner());
                        *unrouted.entry(outcome.name.clone()).or_insert(0) += 1;
                    }
                }
            }
            line.clear();
        }
        fed
    }

    /// `outcome` as the built-in load would have recorded it; none when
    /// its name is no route.
    fn record(
        &self,
        outcome: &Outcome,
        routes: &[LoadRoute],
        started_unix_ms: u64,
    ) -> Option<RequestRecord> {
        let route = routes.iter().find(|r| r.name == outcome.name)?;
        let id = outcome.id.unwrap_or_else(|| {
            let mut next = self.next_id.lock().unwrap_or_else(|e| e.into_inner());
            *next += 1;
            *next
        });
        let sent_ms = outcome
            .start
            .map_or(0.0, |s| s * 1000.0 - started_unix_ms as f64);
        let path = outcome
            .url
            .as_deref()
            .and_then(|u| u.parse::<http::Uri>().ok())
            .map_or_else(String::new, |u| u.path().to_string());
        let sent = Duration::from_secs_f64(sent_ms.max(0.0) / 1000.0);
        let mut record = RequestRecord::sent(id, &route.name, &path, sent);
        match outcome.status {
            Some(status) => {
                record.status = Some(status);
                record.latency = Some(Duration::from_secs_f64(
                    outcome.latency_ms.max(0.0) / 1000.0,
                ));
                record.fallback = fallback(route.fallback.as_ref(), status, outcome);
                record.success = route
                    .success
                    .as_ref()
                    .map(|patterns| patterns.iter().any(|p| p.matches(status)));
            }
            None => {
                record.client_error = Some(client_error(outcome.error.as_deref().unwrap_or("")))
            }
        }
        Some(record)
    }

    /// Requests Locust made under a name that is no route, for the
    /// report's warnings.
    pub fn warnings(&self) -> Vec<String> {
        self.unrouted
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|(name, n)| {
                format!(
                    "Locust made {n} requests named `{name}`, which is none of load.locust.routes: they are not counted"
                )
            })
            .collect()
    }
}

/// The hook's settings: where the outcomes go, the run's seed and
/// correlation headers (the request ids), what the fallback rules read.
fn hook_env(experiment: &Experiment, outcomes: &std::path::Path) -> Vec<(String, String)> {
    let correlation = experiment
        .correlation()
        .map(|c| {
            c.headers
                .iter()
                .map(|h| h.as_str().to_string())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default();
    let rules = experiment.load.iter().filter_map(|r| r.fallback.as_ref());
    let mut headers: Vec<String> = rules
        .clone()
        .filter_map(|r| r.header_name())
        .map(|h| h.to_string())
        .collect();
    headers.push(crate::http::headers::FALLBACK_HEADER.to_string());
    headers.sort();
    headers.dedup();
    let body = rules.clone().any(FallbackRule::reads_body);
    [
        ("FIREDRILL_OUTCOMES", outcomes.display().to_string()),
        ("FIREDRILL_SEED", experiment.seed.to_string()),
        ("FIREDRILL_CORRELATION", correlation),
        ("FIREDRILL_CAPTURE_HEADERS", headers.join(",")),
        (
            "FIREDRILL_CAPTURE_BODY",
            if body { "1" } else { "0" }.to_string(),
        ),
    ]
    .map(|(k, v)| (k.to_string(), v))
    .to_vec()
}

/// The fallback that answered, read as the built-in load reads it.
fn fallback(rule: Option<&FallbackRule>, status: u16, outcome: &Outcome) -> Option<FallbackKind> {
    let mut headers = http::HeaderMap::new();
    for (name, value) in &outcome.headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            headers.append(name, value);
        }
    }
    match rule {
        Some(rule) => {
            let body = outcome.body.as_deref().unwrap_or("").as_bytes();
            rule.matches(status, &headers, body)
                .then_some(FallbackKind::Service)
        }
        None => headers
            .get(crate::http::headers::FALLBACK_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(FallbackKind::from_header),
    }
}

/// What the caller's error was, from the exception Locust gave.
fn client_error(error: &str) -> ClientError {
    let lower = error.to_ascii_lowercase();
    if lower.contains("timeout") || lower.contains("timed out") {
        ClientError::Timeout
    } else if lower.contains("refused") || lower.contains("newconnectionerror") {
        ClientError::Connect
    } else {
        ClientError::Broken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_error_is_read_from_locust_s_exception() {
        assert_eq!(
            client_error("ReadTimeout: HTTPConnectionPool read timed out"),
            ClientError::Timeout
        );
        assert_eq!(
            client_error("ConnectionError: [Errno 111] Connection refused"),
            ClientError::Connect
        );
        assert_eq!(
            client_error("ChunkedEncodingError: broken"),
            ClientError::Broken
        );
    }
}
