//! A dependency whose fault proxy is an agent's, on another host: the
//! drill adopts (or creates) the agent's proxy, applies each fault window
//! as a toxic when it opens and removes it when it closes, renews the
//! toxics' lease, times every call against the agent's clock, and reads
//! the agent's request records back as they come, into the same plan (its
//! arrivals) and record sink a local fault proxy fills. The rest of the
//! drill sees a dependency like any other.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use http::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::agent::clock::ClockSample;
use crate::agent::{AgentClient, AgentError, AgentKind, Answer, Clocks};
use crate::clock::{self, Duration, Instant};
use crate::experiment::config::agent::Agent;
use crate::experiment::error::RunError;
use crate::fault::FaultPlan;
use crate::fault::plan::Arrival;
use crate::http::headers::Correlation;
use crate::proxy::record::{Collected, Record, RecordSink};

mod report;
mod setup;

use setup::{adopt, check_version, create, proxy_path};

/// How often the drill reads an agent's new records.
const POLL: Duration = Duration::from_millis(500);

/// How often the drill times a call to a Toxiproxy agent (a firedrill
/// agent's are timed with each renewal).
const CLOCK_EVERY: Duration = Duration::from_secs(2);

/// One fault window to apply on the agent.
#[derive(Debug, Clone)]
struct Planned {
    /// The fault.
    fault: String,
    /// Its toxic, without the lease.
    toxic: Value,
    /// When it opens and closes, from the drill's start.
    window: (Duration, Duration),
}

/// A window as it went.
#[derive(Debug, Clone, Default)]
struct Applied {
    /// When the agent applied it.
    on: Option<Duration>,
    /// When the agent removed it.
    off: Option<Duration>,
    /// What went wrong.
    error: Option<String>,
}

/// What the tasks of a remote dependency share.
#[derive(Debug, Default)]
struct State {
    /// Every call, timed.
    clocks: Clocks,
    /// Per planned window, in the order of [`Remote::planned`].
    applied: Vec<Applied>,
    /// The toxics on the agent now, by name, with their window's index.
    active: BTreeMap<String, usize>,
    /// The number of the next record to read.
    next_record: u64,
    /// The agent's proxy's time zero, on its wall clock (ms).
    started_unix_ms: f64,
    /// Records read, and records the agent no longer had.
    read: u64,
    dropped: u64,
    /// Why the last read of the records failed, if it did: what the agent
    /// recorded since the read before is not seen.
    unread: Option<String>,
    /// Requests each of the drill's faults hit, by name.
    injected: BTreeMap<String, u64>,
    /// What the report should say went wrong.
    warnings: Vec<String>,
}

/// A dependency behind an agent, while the drill runs.
pub struct Remote {
    /// The dependency's name.
    name: String,
    /// The agent as the file gives it.
    agent: Agent,
    /// Calls to its API.
    client: AgentClient,
    /// The drill's start.
    start: Instant,
    /// Whether the drill created the proxy (and deletes it at the end).
    created: bool,
    /// Every window of every fault of the dependency, by opening time.
    planned: Vec<Planned>,
    /// Shared with the tasks.
    state: Mutex<State>,
    /// Where the arrivals read from the agent go (the stream reads them).
    plan: Arc<FaultPlan>,
    /// Where the records read from the agent go.
    records: Arc<Collected>,
    /// Reads the load's ids from the records.
    correlation: Option<Correlation>,
    /// Stops the scheduler (`true`), then the reader and the renewals.
    stop_faults: watch::Sender<bool>,
    stop_reading: watch::Sender<bool>,
    /// The tasks, awaited at the end.
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("name", &self.name)
            .field("api", &self.agent.api)
            .finish_non_exhaustive()
    }
}

/// What goes wrong standing a remote dependency up, at the agent's key.
fn refused(agent: &Agent, key: &str, message: String) -> RunError {
    RunError::At {
        key: format!("{}{key}", agent.at),
        message: format!("{}: {message}", agent.api),
    }
}

impl Remote {
    /// Reaches the agent, checks what it is, adopts or creates its proxy,
    /// and starts applying the dependency's faults on `plan`'s clock.
    #[allow(clippy::too_many_arguments)]
    pub async fn start(
        name: &str,
        agent: &Agent,
        faults: &[crate::fault::Fault],
        toxics: &BTreeMap<String, Value>,
        duration: Duration,
        start: Instant,
        plan: Arc<FaultPlan>,
        records: Arc<Collected>,
        correlation: Option<Correlation>,
    ) -> Result<Arc<Remote>, RunError> {
        let client = AgentClient::new(&agent.api, agent.token.clone(), agent.client.clone(), start)
            .await
            .map_err(|e| refused(agent, ".api", e.0))?;
        let mut state = State::default();
        let call = |e: AgentError| refused(agent, ".api", e.0);
        let version = client
            .call(Method::GET, "/version", None)
            .await
            .map_err(call)?;
        state.clocks.push(version.sample);
        check_version(agent, &version)?;
        let path = proxy_path(&agent.proxy);
        let existing = client.call(Method::GET, &path, None).await.map_err(call)?;
        state.clocks.push(existing.sample);
        let created = match existing.status {
            StatusCode::OK => {
                adopt(agent, &existing)?;
                false
            }
            StatusCode::NOT_FOUND => {
                create(agent, &client, &mut state).await?;
                true
            }
            other => {
                return Err(refused(
                    agent,
                    ".proxy",
                    format!("GET {path}: {other}: {}", existing.error_text()),
                ));
            }
        };
        let mut planned: Vec<Planned> = faults
            .iter()
            .filter_map(|f| Some((f, toxics.get(&f.name)?)))
            .flat_map(|(f, toxic)| {
                f.window
                    .windows_within(duration)
                    .into_iter()
                    .map(move |window| Planned {
                        fault: f.name.clone(),
                        toxic: toxic.clone(),
                        window,
                    })
            })
            .collect();
        planned.sort_by_key(|p| p.window.0);
        state.applied = vec![Applied::default(); planned.len()];
        let remote = Arc::new(Remote {
            name: name.to_string(),
            agent: agent.clone(),
            client,
            start,
            created,
            planned,
            state: Mutex::new(state),
            plan,
            records,
            correlation,
            stop_faults: watch::channel(false).0,
            stop_reading: watch::channel(false).0,
            tasks: Mutex::default(),
        });
        // Leftovers of an earlier drill under the same names go first.
        let names: BTreeSet<String> = remote.planned.iter().map(|p| p.fault.clone()).collect();
        for name in &names {
            let _ = remote
                .call(Method::DELETE, &remote.toxic_path(name), None)
                .await;
        }
        if agent.kind == AgentKind::Firedrill {
            remote.skip_old_records().await?;
        }
        let tasks = vec![
            tokio::spawn(remote.clone().schedule()),
            tokio::spawn(remote.clone().keep()),
        ];
        remote.lock().warnings.extend(
            (agent.kind == AgentKind::Toxiproxy).then(|| {
                format!(
                    "dependency {name}: its agent at {} is a Toxiproxy: its faults carry no lease (a drill killed with -9 leaves them until removed by hand), and it keeps no request records (nothing that reached {name} is seen)",
                    agent.api
                )
            }),
        );
        *remote.tasks.lock().unwrap_or_else(|e| e.into_inner()) = tasks;
        Ok(remote)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn toxic_path(&self, toxic: &str) -> String {
        format!(
            "{}/toxics/{}",
            proxy_path(&self.agent.proxy),
            crate::http::escape_unreserved(toxic)
        )
    }

    /// A call, timed into the agent's clock samples.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Answer, AgentError> {
        let answer = self.client.call(method, path, body).await?;
        self.lock().clocks.push(answer.sample);
        Ok(answer)
    }

    /// Where the agent's answer falls on the drill's clock: the time it
    /// stamped, placed with the offset; the call's middle without one.
    fn answered_at(&self, sample: &ClockSample) -> Duration {
        let placed = sample
            .agent_us
            .filter(|_| !sample.coarse)
            .and_then(|us| self.lock().clocks.to_drill(us as f64));
        placed.unwrap_or_else(|| sample.middle())
    }

    /// Starts reading the agent's records after the last one it holds now:
    /// the requests before the drill are not the drill's.
    async fn skip_old_records(&self) -> Result<(), RunError> {
        let path = format!(
            "{}/records?since={}&limit=0",
            proxy_path(&self.agent.proxy),
            u64::MAX
        );
        let answer = self
            .call(Method::GET, &path, None)
            .await
            .map_err(|e| refused(&self.agent, ".api", e.0))?;
        let page: Page = answer
            .json()
            .map_err(|e| refused(&self.agent, ".api", format!("GET {path}: {e}")))?;
        let mut state = self.lock();
        state.next_record = page.next;
        state.started_unix_ms = page.started_unix_ms;
        Ok(())
    }

    /// Applies each window when it opens and removes it when it closes,
    /// until told to stop.
    async fn schedule(self: Arc<Self>) {
        let mut events: Vec<(Duration, bool, usize)> = self
            .planned
            .iter()
            .enumerate()
            .flat_map(|(i, p)| [(p.window.0, true, i), (p.window.1, false, i)])
            .collect();
        // At one instant, a window's end before the next one's start.
        events.sort_by_key(|&(at, on, i)| (at, on, i));
        let mut stop = self.stop_faults.subscribe();
        for (at, on, i) in events {
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => return,
                _ = clock::sleep_until(self.start + at) => {}
            }
            self.switch(i, on).await;
        }
    }

    /// Adds window `i`'s toxic (`on`) or removes it if it is on, and notes
    /// when the agent answered, or why the change did not take.
    async fn switch(&self, i: usize, on: bool) {
        let fault = &self.planned[i].fault;
        let (method, path, body, failed) = if on {
            let mut toxic = self.planned[i].toxic.clone();
            if self.agent.kind == AgentKind::Firedrill {
                toxic["lease_ms"] = json!(self.agent.lease.as_millis() as u64);
            }
            let path = format!("{}/toxics", proxy_path(&self.agent.proxy));
            (Method::POST, path, Some(toxic), "was not applied by")
        } else {
            if self.lock().active.get(fault) != Some(&i) {
                return;
            }
            let path = self.toxic_path(fault);
            (Method::DELETE, path, None, "could not be removed from")
        };
        let answer = self.call(method.clone(), &path, body.as_ref()).await;
        let outcome = match answer {
            // A removal finding it gone (a lease ran out): off all the same.
            Ok(a) if a.status.is_success() || (!on && a.status == StatusCode::NOT_FOUND) => {
                Ok(self.answered_at(&a.sample))
            }
            Ok(a) => Err(format!("{method} {path}: {}: {}", a.status, a.error_text())),
            Err(e) => Err(e.0),
        };
        let mut state = self.lock();
        match outcome {
            Ok(at) if on => {
                state.applied[i].on = Some(at);
                state.active.insert(fault.clone(), i);
            }
            Ok(at) => {
                state.applied[i].off = Some(at);
                state.active.remove(fault);
            }
            Err(why) => {
                state.warnings.push(format!(
                    "dependency {}: fault {fault} {failed} its agent: {why}",
                    self.name
                ));
                state.applied[i].error = Some(why);
            }
        }
    }

    /// Renews the lease (firedrill) or times a call (Toxiproxy), and reads
    /// the new records, until told to stop reading.
    async fn keep(self: Arc<Self>) {
        let mut stop = self.stop_reading.subscribe();
        let renew_every = match self.agent.kind {
            AgentKind::Firedrill => self.agent.lease / 3,
            AgentKind::Toxiproxy => CLOCK_EVERY,
        };
        let mut renewed = clock::now();
        loop {
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => return,
                _ = clock::sleep(POLL.min(renew_every)) => {}
            }
            if clock::now().saturating_duration_since(renewed) >= renew_every {
                renewed = clock::now();
                self.renew().await;
            }
            if self.agent.kind == AgentKind::Firedrill {
                self.read_records().await;
            }
        }
    }

    /// Holds the leased toxics for another lease; each renewal is a clock
    /// sample too.
    async fn renew(&self) {
        let (path, body) = match self.agent.kind {
            AgentKind::Firedrill => (
                format!("{}/lease", proxy_path(&self.agent.proxy)),
                Some(json!({ "lease_ms": self.agent.lease.as_millis() as u64 })),
            ),
            AgentKind::Toxiproxy => ("/version".to_string(), None),
        };
        let method = if body.is_some() {
            Method::POST
        } else {
            Method::GET
        };
        match self.call(method, &path, body.as_ref()).await {
            Ok(a) if a.status.is_success() => {}
            Ok(a) => self.warn(format!("{path}: {}: {}", a.status, a.error_text())),
            Err(e) => self.warn(e.0),
        }
    }

    fn warn(&self, why: String) {
        let mut state = self.lock();
        let line = format!(
            "dependency {}: its agent at {}: {why}",
            self.name, self.agent.api
        );
        if !state.warnings.contains(&line) {
            state.warnings.push(line);
        }
    }

    /// Reads every record the agent has past the last one read.
    async fn read_records(&self) {
        loop {
            let since = self.lock().next_record;
            let path = format!("{}/records?since={since}", proxy_path(&self.agent.proxy));
            let page: Page = match self
                .call(Method::GET, &path, None)
                .await
                .and_then(|a| a.json())
            {
                Ok(page) => page,
                Err(e) => {
                    self.lock().unread = Some(e.to_string());
                    return self.warn(format!("reading its records: {e}"));
                }
            };
            self.lock().unread = None;
            let full = page.records.len() >= crate::api::journal::PAGE;
            self.take(page);
            if !full {
                return;
            }
        }
    }

    /// Puts one page of records on the drill's clock, into the plan's
    /// arrivals and the record sink.
    fn take(&self, page: Page) {
        let mut state = self.lock();
        state.next_record = page.next;
        state.dropped += page.dropped;
        state.started_unix_ms = page.started_unix_ms;
        let zero_us = page.started_unix_ms * 1000.0;
        let mut arrivals = Vec::with_capacity(page.records.len());
        for mut record in page.records {
            let Some(at) = state.clocks.to_drill(zero_us + record.at_ms * 1000.0) else {
                continue;
            };
            let request_id = record.load_request(self.correlation.as_ref());
            if let Some(fault) = &record.fault
                && self.planned.iter().any(|p| &p.fault == fault)
            {
                *state.injected.entry(fault.clone()).or_insert(0) += 1;
            }
            record.at_ms = at.as_micros() as f64 / 1000.0;
            record.proxy = Arc::from(self.name.as_str());
            record.request_id = request_id;
            arrivals.push(Arrival {
                at,
                path: record.path.split('?').next().unwrap_or("").to_string(),
                request_id,
            });
            self.records.record(&record);
            state.read += 1;
        }
        drop(state);
        arrivals.sort_by_key(|a| a.at);
        for arrival in arrivals {
            self.plan.push_arrival(arrival);
        }
    }

    /// Removes every fault of the drill from the agent now (an interrupt,
    /// a halt, the drill's end), first of all.
    pub async fn withdraw(&self) {
        let _ = self.stop_faults.send(true);
        let active: Vec<usize> = self.lock().active.values().copied().collect();
        futures_util::future::join_all(active.into_iter().map(|i| self.switch(i, false))).await;
    }

    /// At the drill's end: every fault removed, the last records read, the
    /// proxy deleted if the drill created it; the tasks stopped.
    pub async fn finish(&self) {
        self.withdraw().await;
        let _ = self.stop_reading.send(true);
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|e| e.into_inner()));
        for task in tasks {
            let _ = task.await;
        }
        if self.agent.kind == AgentKind::Firedrill {
            self.read_records().await;
        }
        if self.created {
            let path = proxy_path(&self.agent.proxy);
            if let Err(e) = self.call(Method::DELETE, &path, None).await {
                self.warn(format!("deleting the proxy it created: {e}"));
            }
        }
    }
}

/// One page of a firedrill agent's records
/// ([`crate::api::journal::Page`]).
#[derive(Debug, serde::Deserialize)]
struct Page {
    started_unix_ms: f64,
    next: u64,
    dropped: u64,
    records: Vec<Record>,
}
