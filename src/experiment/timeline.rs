//! What a run recorded: every request as the load generator saw it (joined
//! with the defense line's report of it), every request that reached the
//! target, every breaker transition, and the fault windows. Expectations
//! and reports read only this, so they are pure functions of a run.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::clock::Duration;
use crate::defense::breaker::{State, Transition};
use crate::defense::fallback::FallbackKind;
use crate::defense::report::{CallError, HealthChange, Rejection, ServedBy};

/// Everything a run recorded; times are offsets from the run's start.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// How long the run lasted (shorter than planned when halted).
    pub duration: Duration,
    /// Client requests, in the order they were sent.
    pub requests: Vec<RequestRecord>,
    /// Requests that reached the target, in arrival order (a retried
    /// request arrives more than once).
    pub target_hits: Vec<TargetHit>,
    /// Breaker transitions, in order.
    pub transitions: Vec<Transition>,
    /// Pool servers taken out of rotation and brought back, in order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub health: Vec<HealthChange>,
    /// The pools of the defense line.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pools: Vec<PoolInfo>,
    /// The faults and when each was active.
    pub faults: Vec<FaultWindows>,
    /// The breakers of the defense line.
    pub breakers: Vec<BreakerInfo>,
    /// Named phases of the run.
    pub phases: Vec<Phase>,
    /// What a user's service reported of its own breakers (events file,
    /// Prometheus), beside the inferred transitions; never judged.
    pub reported: Vec<Transition>,
    /// A user's service: every request through its dependency proxies, in
    /// arrival order (`dependencies.jsonl`).
    #[serde(skip)]
    pub dependency_requests: Vec<crate::proxy::record::Record>,
    /// A user's service's run: its requests, target hits and dependency
    /// calls on disk, in place of the three lists above (which are then
    /// empty). Read them with [`Timeline::each_request`],
    /// [`Timeline::each_hit`] and [`Timeline::each_dependency_request`].
    #[serde(skip)]
    pub kept: Option<Arc<dyn PerRequest>>,
}

/// A run's per-request lists kept out of memory (on disk:
/// `experiment::kept::KeptLists`), read in passes.
pub trait PerRequest: std::fmt::Debug + Send + Sync {
    /// Every client request, in id order.
    fn each_request(&self, take: &mut dyn FnMut(&RequestRecord));
    /// Every target hit in arrival order, with the request of its id.
    fn each_hit(&self, take: &mut dyn FnMut(&TargetHit, Option<&Sender>));
    /// Every call through the dependency proxies, in arrival order.
    fn each_call(&self, take: &mut dyn FnMut(&crate::proxy::record::Record));
    /// Target hits.
    fn hits(&self) -> usize;
    /// Calls through the dependency proxies.
    fn calls(&self) -> usize;
    /// The first read or write of the lists that failed: what was read
    /// back misses items from then on.
    fn error(&self) -> Option<std::io::Error>;
}

/// The request a target hit belongs to, as the judges need it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sender {
    /// Its load route.
    pub route: String,
    /// When it was sent.
    pub sent: Duration,
}

impl Timeline {
    /// Every client request, in the order they were sent (by id).
    pub fn each_request(&self, take: &mut dyn FnMut(&RequestRecord)) {
        match &self.kept {
            Some(kept) => kept.each_request(take),
            None => self.requests.iter().for_each(take),
        }
    }

    /// Every target hit, in arrival order, with the route and send time of
    /// the request of its id, when the run sent one.
    pub fn each_hit(&self, take: &mut dyn FnMut(&TargetHit, Option<&Sender>)) {
        if let Some(kept) = &self.kept {
            return kept.each_hit(take);
        }
        let senders: BTreeMap<u64, Sender> = self
            .requests
            .iter()
            .map(|r| {
                let sender = Sender {
                    route: r.route.clone(),
                    sent: r.sent,
                };
                (r.id, sender)
            })
            .collect();
        for h in &self.target_hits {
            take(h, h.request_id.and_then(|id| senders.get(&id)));
        }
    }

    /// Every call through a user's service's dependency proxies, in
    /// arrival order.
    pub fn each_dependency_request(&self, take: &mut dyn FnMut(&crate::proxy::record::Record)) {
        match &self.kept {
            Some(kept) => kept.each_call(take),
            None => self.dependency_requests.iter().for_each(take),
        }
    }

    /// Whether no request reached the target, nor any call a dependency.
    pub fn nothing_reached(&self) -> bool {
        match &self.kept {
            Some(kept) => kept.hits() == 0 && kept.calls() == 0,
            None => self.target_hits.is_empty() && self.dependency_requests.is_empty(),
        }
    }
}

impl Timeline {
    /// A copy of this timeline into which its per-request lists (requests,
    /// target hits, the dependencies' calls) move rather than being copied:
    /// a user's service's run keeps them, and they are most of its memory.
    pub fn moved_out(&mut self) -> Timeline {
        let requests = std::mem::take(&mut self.requests);
        let target_hits = std::mem::take(&mut self.target_hits);
        let dependency_requests = std::mem::take(&mut self.dependency_requests);
        Timeline {
            requests,
            target_hits,
            dependency_requests,
            kept: self.kept.take(),
            ..self.clone()
        }
    }
}

/// One client request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Sequence number, also sent as `x-firedrill-request-id`.
    pub id: u64,
    /// The load route (`load[].name`) that sent it.
    pub route: String,
    /// The request path.
    pub path: String,
    /// When it was sent.
    #[serde(skip)]
    pub sent: Duration,
    /// Time to the response head; `None` when no response came.
    #[serde(skip)]
    pub latency: Option<Duration>,
    /// The status the client got.
    pub status: Option<u16>,
    /// Why the client got no response, if it did not.
    pub client_error: Option<ClientError>,
    /// The fallback that answered, if one did.
    pub fallback: Option<FallbackKind>,
    /// What in the defense line turned it away, if anything.
    pub rejected_by: Option<Rejection>,
    /// How the defense line's last attempt failed, if it did.
    pub defense_error: Option<CallError>,
    /// The breaker's state when the request asked it.
    pub breaker_state: Option<State>,
    /// Attempts the defense line sent to the dependency.
    pub attempts: u32,
    /// How many times it reached the dependency (retries count each).
    pub reached_dependency: u32,
    /// The route's own `success` statuses judged the answer: whether it
    /// was a success (none: the default, 2xx and 3xx).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success: Option<bool>,
    /// The pool server that answered, when the dependency is a pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served_by: Option<Box<ServedBy>>,
    /// A gRPC answer's `grpc-status` (0 is OK), from its head or its
    /// trailers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc_status: Option<u8>,
}

impl RequestRecord {
    /// A request of `route` to `path` as it is sent at `sent`: nothing
    /// known of its answer yet.
    pub fn sent(id: u64, route: &str, path: &str, sent: Duration) -> RequestRecord {
        RequestRecord {
            id,
            route: route.to_string(),
            path: path.to_string(),
            sent,
            latency: None,
            status: None,
            client_error: None,
            fallback: None,
            rejected_by: None,
            defense_error: None,
            breaker_state: None,
            attempts: 0,
            reached_dependency: 0,
            success: None,
            served_by: None,
            grpc_status: None,
        }
    }

    /// The client got a 2xx or 3xx answer (a fallback answer included)
    /// and, for a gRPC call, status OK: a gRPC failure rides on HTTP 200.
    pub fn succeeded(&self) -> bool {
        self.success.unwrap_or_else(|| {
            self.status.is_some_and(|s| (200..400).contains(&s))
                && self.grpc_status.is_none_or(|g| g == 0)
        })
    }

    /// The request timed out somewhere: at the client or at the defense line.
    pub fn timed_out(&self) -> bool {
        self.client_error == Some(ClientError::Timeout)
            || matches!(
                self.defense_error,
                Some(CallError::Timeout) | Some(CallError::Deadline)
            )
    }
}

/// Why the load generator got no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientError {
    /// The load route's own timeout fired.
    Timeout,
    /// The connection could not be made.
    Connect,
    /// The connection broke before a complete response head.
    Broken,
    /// The in-flight cap was hit; the request was not sent.
    Shed,
}

/// One request that reached the target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetHit {
    /// When it arrived at the target.
    pub at: Duration,
    /// Its path.
    pub path: String,
    /// The client request it belongs to, from `x-firedrill-request-id`.
    pub request_id: Option<u64>,
    /// The built-in target's instance that received it, when the target
    /// runs several.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance: Option<String>,
}

/// A fault and the intervals it was active, clipped to the run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FaultWindows {
    /// The fault's name.
    pub name: String,
    /// Its kind (`latency`, `status`, ...).
    pub kind: String,
    /// `[start, end)` intervals.
    pub windows: Vec<(Duration, Duration)>,
}

impl FaultWindows {
    /// The first start and the last end: the fault's whole window.
    pub fn span(&self) -> Option<(Duration, Duration)> {
        Some((self.windows.first()?.0, self.windows.last()?.1))
    }
}

/// A breaker of the defense line and the settings expectations refer to.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BreakerInfo {
    /// Its name (the route's).
    pub name: String,
    /// The wait in open (`wait_in_open` or `breaker_duration`).
    pub wait_in_open: Duration,
    /// The path glob of its route, if it has one.
    pub path_glob: Option<String>,
    /// A user's service's breaker inferred from both sides: what its
    /// evidence holds (`None` for the defense line's own, and for one
    /// read from the dependency's side alone).
    pub evidence: Option<Quality>,
}

/// What one breaker's evidence holds and lacks: the figures the evidence
/// gate reads before a verdict, shown per breaker in the report.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Quality {
    /// Calls that reached the dependency on the breaker's paths during
    /// the run.
    pub calls: u64,
    /// Of them, the calls whose id is the id of a request the drill sent:
    /// paired exactly. A call carrying no id, or an id no request of the
    /// drill has, is not paired.
    pub paired: u64,
    /// Requests the drill sent on the breaker's routes.
    pub requests: u64,
    /// Of them, requests a paired call was made for.
    pub requests_reached: u64,
    /// Requests answered after the run's end, or never: what became of
    /// them is cut off, so none is taken for a short-circuit.
    pub cut_off: u64,
    /// Calls still outstanding at the run's end (no answer, not let go).
    pub outstanding: u64,
    /// Whether the calls were expected to carry the requests' ids: the
    /// experiment names its correlation headers, the breaker is reached
    /// `via` another dependency, or some call did carry one.
    pub ids_expected: bool,
    /// What the dependency's agent lost of its records (dropped, or not
    /// read), if anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    /// Open intervals the caller's side contradicts (no request
    /// short-circuited while calls reached the dependency), as sentences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contradicted: Vec<String>,
}

/// A pool of the defense line and its servers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolInfo {
    /// Its name.
    pub name: String,
    /// Its servers: name and whether it is a backup.
    pub servers: Vec<(String, bool)>,
    /// Its servers start out of rotation until they pass an active health
    /// check (the pool has one).
    pub starts_out: bool,
    /// How long a server that comes back ramps up to its full share
    /// (`slow_start`; zero: no ramp).
    pub slow_start: Duration,
}

/// A named span of the run (`phases:` in the experiment).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// Its name.
    pub name: String,
    /// Start.
    pub from: Duration,
    /// End.
    pub to: Duration,
}

impl Timeline {
    /// The intervals during which breaker `name` was in `state`, from the
    /// journal (every breaker starts closed at 0).
    pub fn intervals_in_state(&self, name: &str, state: State) -> Vec<(Duration, Duration)> {
        let mut out = Vec::new();
        let mut current = State::Closed;
        let mut since = Duration::ZERO;
        for t in self.transitions.iter().filter(|t| t.breaker == name) {
            if current == state && t.at > since {
                out.push((since, t.at));
            }
            current = t.to;
            since = t.at;
        }
        if current == state && self.duration > since {
            out.push((since, self.duration));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grpc_call_succeeds_only_with_status_ok_though_every_answer_is_an_http_200() {
        let mut r = RequestRecord::sent(1, "shop", "/inventory.Inventory/Get", Duration::ZERO);
        r.status = Some(200);
        assert!(r.succeeded(), "an HTTP call answered 200");
        r.grpc_status = Some(0);
        assert!(r.succeeded(), "gRPC OK");
        for failed in [1, 5, 14] {
            r.grpc_status = Some(failed);
            assert!(!r.succeeded(), "gRPC status {failed}");
        }
        r.status = Some(503);
        r.grpc_status = None;
        assert!(!r.succeeded());
        r.success = Some(true);
        assert!(r.succeeded(), "the route's own success statuses decide");
    }

    #[test]
    fn a_moved_out_timeline_takes_the_per_request_lists_and_copies_the_rest() {
        let mut timeline = Timeline {
            duration: Duration::from_secs(60),
            requests: vec![RequestRecord::sent(1, "shop", "/stock/1", Duration::ZERO)],
            target_hits: vec![TargetHit {
                at: Duration::from_millis(3),
                path: "/inventory/1".into(),
                request_id: Some(1),
                instance: None,
            }],
            phases: vec![Phase {
                name: "outage".into(),
                from: Duration::from_secs(10),
                to: Duration::from_secs(20),
            }],
            ..Timeline::default()
        };
        let whole = serde_json::to_value(&timeline).unwrap();
        let moved = timeline.moved_out();
        assert_eq!(serde_json::to_value(&moved).unwrap(), whole);
        assert!(timeline.requests.is_empty() && timeline.target_hits.is_empty());
        assert_eq!(timeline.duration, moved.duration);
        assert_eq!(timeline.phases.len(), 1, "the rest is still the run's");
    }
}
