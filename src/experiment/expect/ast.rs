//! What a parsed expectation says: the rule, the names it refers to (with
//! their columns, so `check` can point at them) and the bound it asserts.

use std::fmt;

use crate::clock::Duration;
use crate::defense::breaker::State;
use crate::fault::matcher::HttpMatch;

mod metric;
mod query;
mod regress;

pub use metric::{LatencyStat, Metric, ValueKind};
pub use query::{Aggregate, QueryMeasure, QueryRule, QueryWindow};
pub use regress::{Baseline, Direction, Margin, Measure, PastRun, Regress, Stat};

/// One expectation: the sentence as written and what it means.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The sentence as written (trimmed); verdicts and reports quote it.
    pub text: String,
    /// What it asserts.
    pub rule: Rule,
}

/// A name the sentence refers to (a breaker, fault, route or phase).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name {
    /// The name as written.
    pub text: String,
    /// 1-based column in the sentence, so an unknown name can be pointed at.
    pub column: usize,
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The assertion of an expectation.
#[derive(Debug, Clone, PartialEq)]
pub enum Rule {
    /// `breaker B goes [through] S -> S -> ...`: the states the breaker
    /// visited, starting at closed.
    Sequence {
        /// The breaker.
        breaker: Name,
        /// The states as written.
        states: Vec<State>,
        /// `true`: exactly this sequence; `false` (`through`): these states
        /// in this order, others allowed in between.
        exact: bool,
    },
    /// `breaker B opens within 3s of ANCHOR`: the first such transition at
    /// or after the anchor comes no later than `within` after it.
    Reaches {
        /// The breaker.
        breaker: Name,
        /// The transition awaited.
        event: Event,
        /// The longest acceptable delay after the anchor (inclusive).
        within: Duration,
        /// What the delay is measured from.
        anchor: Anchor,
    },
    /// `breaker B half_opens within wait_in_open ± 500ms after opening`:
    /// every open → half_open gap is the wait, give or take the tolerance.
    WaitInOpen {
        /// The breaker.
        breaker: Name,
        /// The wait expected: the breaker's own, or one written out.
        wait: Wait,
        /// How far a gap may be from the wait (inclusive).
        tolerance: Duration,
    },
    /// `breaker B opens at most 2 times [WINDOW]`, `breaker B never opens
    /// [WINDOW]`: how many such transitions happened in the window.
    Count {
        /// The breaker.
        breaker: Name,
        /// The transition counted.
        event: Event,
        /// The bound on the count (`never` is at most 0).
        bound: CountBound,
        /// Where transitions are counted.
        window: Window,
    },
    /// `breaker B stays closed [WINDOW]`: the breaker is in the state for
    /// the whole window.
    Stays {
        /// The breaker.
        breaker: Name,
        /// The state it must keep.
        state: State,
        /// Where it must keep it.
        window: Window,
    },
    /// `calls to GLOB [on instance I] [WINDOW] OP N`, `calls to instance I
    /// [WINDOW] OP N`: target hits on matching paths that arrived inside the
    /// window (the counter proof with `while B is open`).
    Calls {
        /// The paths counted.
        glob: PathGlob,
        /// Only hits at this instance of the built-in target, and only
        /// client calls (a pool's health checks are not counted).
        instance: Option<Name>,
        /// Where hits are counted, by arrival time.
        window: Window,
        /// The bound on the count.
        bound: Bound,
    },
    /// `route R METRIC [WINDOW] OP VALUE`: a figure of one load route over
    /// the requests it sent inside the window.
    Route {
        /// The load route (`load[].name`).
        route: Name,
        /// The figure.
        metric: Metric,
        /// Which requests count, by send time.
        window: Window,
        /// The bound on the figure.
        bound: Bound,
    },
    /// The sentences about pools: `instance ...`, `pool ...`.
    Pool(PoolRule),
    /// `query NAME AGG [WINDOW] BOUND`: a named PromQL query's value over
    /// the window, judged by Prometheus after the run.
    Query(QueryRule),
    /// `FIGURE no worse than BASELINE [+ MARGIN]`: a figure of this run
    /// against the same figure of past runs of the history in which it held.
    Regress(Regress),
}

impl Rule {
    /// The route and window of a sentence judged on a route's requests (a
    /// route sentence, or a regression sentence on a route figure).
    pub fn counted_route(&self) -> Option<(&Name, &Window)> {
        match self {
            Rule::Route { route, window, .. }
            | Rule::Regress(Regress {
                measure: Measure::Route { route, window, .. },
                ..
            }) => Some((route, window)),
            _ => None,
        }
    }

    /// The breakers the sentence is about: the one it names, and the one
    /// whose state bounds its window (`while inventory is open`).
    pub fn breakers(&self) -> Vec<&str> {
        let named = match self {
            Rule::Sequence { breaker, .. }
            | Rule::Reaches { breaker, .. }
            | Rule::WaitInOpen { breaker, .. }
            | Rule::Count { breaker, .. }
            | Rule::Stays { breaker, .. }
            | Rule::Regress(Regress {
                measure: Measure::Transition { breaker, .. },
                ..
            }) => Some(breaker.text.as_str()),
            _ => None,
        };
        let window = match self {
            Rule::Count { window, .. } | Rule::Stays { window, .. } => Some(window),
            Rule::Query(QueryRule {
                measure:
                    QueryMeasure {
                        window: QueryWindow::Drill(window),
                        ..
                    },
                ..
            })
            | Rule::Regress(Regress {
                measure:
                    Measure::Query(QueryMeasure {
                        window: QueryWindow::Drill(window),
                        ..
                    }),
                ..
            }) => Some(window),
            _ => self.counted_window(),
        };
        let bounding = match window {
            Some(Window::While { breaker, .. }) => Some(breaker.text.as_str()),
            _ => None,
        };
        named.into_iter().chain(bounding).collect()
    }

    /// The window whose requests or target hits the sentence counts (the
    /// sentences judged on figures); `None` for the others.
    pub fn counted_window(&self) -> Option<&Window> {
        match self {
            Rule::Calls { window, .. }
            | Rule::Route { window, .. }
            | Rule::Pool(PoolRule::Share { window, .. } | PoolRule::Backup { window, .. })
            | Rule::Regress(Regress {
                measure: Measure::Route { window, .. },
                ..
            }) => Some(window),
            _ => None,
        }
    }
}

/// A pool server named in a sentence: `instance b` or `instance b of
/// inventory` (the pool may be left out when only one pool has a server of
/// that name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// The server's name.
    pub name: Name,
    /// Its pool, when written.
    pub pool: Option<Name>,
}

impl Server {
    /// Whether a pool server `(pool, server)` is this one.
    pub fn is(&self, pool: &str, server: &str) -> bool {
        self.name.text == server && self.pool.as_ref().is_none_or(|p| p.text == pool)
    }
}

impl fmt::Display for Server {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.pool {
            Some(pool) => write!(f, "instance {} of {pool}", self.name),
            None => write!(f, "instance {}", self.name),
        }
    }
}

/// The sentences about a pool and its servers.
#[derive(Debug, Clone, PartialEq)]
pub enum PoolRule {
    /// `instance I [of P] is ejected|returns within 3s of ANCHOR`: the
    /// first such health change at or after the anchor comes no later than
    /// `within` after it.
    Health {
        /// The server.
        server: Server,
        /// `returns` (true) or `is ejected` (false).
        healthy: bool,
        /// The longest acceptable delay after the anchor (inclusive).
        within: Duration,
        /// What the delay is measured from.
        anchor: Anchor,
    },
    /// `instance I [of P] is never ejected [WINDOW]`.
    NeverEjected {
        /// The server.
        server: Server,
        /// Where ejections are counted.
        window: Window,
    },
    /// `instance I [of P] share [WINDOW] BOUND`: the share of the pool's
    /// calls (sent in the window) that this server answered.
    Share {
        /// The server.
        server: Server,
        /// Which calls count, by send time.
        window: Window,
        /// The bound on the share.
        bound: Bound,
    },
    /// `pool P served by backup [WINDOW] BOUND`: the share of the pool's
    /// calls (sent in the window) that a backup server answered.
    Backup {
        /// The pool.
        pool: Name,
        /// Which calls count, by send time.
        window: Window,
        /// The bound on the share.
        bound: Bound,
    },
}

/// A breaker transition, named by the state it enters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Into `open` (from closed or half_open).
    Opens,
    /// Into `closed`.
    Closes,
    /// Into `half_open`.
    HalfOpens,
}

impl Event {
    /// The state the transition enters.
    pub fn state(self) -> State {
        match self {
            Event::Opens => State::Open,
            Event::Closes => State::Closed,
            Event::HalfOpens => State::HalfOpen,
        }
    }

    /// The verb as written: `opens`, `closes`, `half_opens`.
    pub fn verb(self) -> &'static str {
        match self {
            Event::Opens => "opens",
            Event::Closes => "closes",
            Event::HalfOpens => "half_opens",
        }
    }

    /// The verb in the past: `opened`, `closed`, `half-opened`.
    pub fn past(self) -> &'static str {
        match self {
            Event::Opens => "opened",
            Event::Closes => "closed",
            Event::HalfOpens => "half-opened",
        }
    }
}

/// What a timing is measured from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Anchor {
    /// `FAULT.start` or `fault FAULT`: the first start of the fault.
    FaultStart(Name),
    /// `FAULT.end`: the last end of the fault.
    FaultEnd(Name),
    /// `10s`: a time since the run started.
    At(Duration),
}

/// The wait an open → half_open gap is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// `wait_in_open`: the breaker's configured wait.
    Configured,
    /// A duration written in the sentence.
    Fixed(Duration),
}

/// A bound on a count of transitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CountBound {
    /// `at most N times` (`never` is at most 0).
    AtMost(u32),
    /// `at least N times`.
    AtLeast(u32),
    /// `exactly N times`.
    Exactly(u32),
}

impl CountBound {
    /// Whether `count` satisfies the bound.
    pub fn holds(self, count: usize) -> bool {
        match self {
            CountBound::AtMost(n) => count <= n as usize,
            CountBound::AtLeast(n) => count >= n as usize,
            CountBound::Exactly(n) => count == n as usize,
        }
    }
}

/// A part of the run; requests belong to it by send time, transitions and
/// target hits by their time. Intervals are `[start, end)`, clipped to the
/// run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Window {
    /// No window written: the whole run.
    Run,
    /// `during FAULT`: the fault's whole span, first start to last end.
    During(Name),
    /// `while BREAKER is STATE`: every interval the breaker spent in it.
    While {
        /// The breaker.
        breaker: Name,
        /// The state.
        state: State,
    },
    /// `between 10s and 40s`.
    Between(Duration, Duration),
    /// `in phase NAME`.
    Phase(Name),
    /// `while instance I [of P] is ejected`: from each health change that
    /// took the server out of rotation to the one that brought it back.
    Ejected(Server),
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>=` (or `≥`).
    Ge,
    /// `<=` (or `≤`).
    Le,
    /// `==`.
    Eq,
    /// `>`.
    Gt,
    /// `<`.
    Lt,
}

impl Op {
    /// The operator as written.
    pub fn symbol(self) -> &'static str {
        match self {
            Op::Ge => ">=",
            Op::Le => "<=",
            Op::Eq => "==",
            Op::Gt => ">",
            Op::Lt => "<",
        }
    }
}

/// A value in a sentence, typed by the metric it is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// `99%`, in percent.
    Percent(f64),
    /// `5ms`.
    Duration(Duration),
    /// `0`, `600`.
    Count(u64),
    /// `3`, `2.5`.
    Number(f64),
}

impl Value {
    /// The value on the scale figures are compared on: percent, seconds,
    /// or the number itself.
    pub fn scalar(self) -> f64 {
        match self {
            Value::Percent(p) => p,
            Value::Duration(d) => d.as_secs_f64(),
            Value::Count(n) => n as f64,
            Value::Number(x) => x,
        }
    }
}

/// A bound on a figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// `OP VALUE`.
    Cmp(Op, Value),
    /// `within P% of VALUE`: |seen − value| <= P% of value.
    Within {
        /// The relative tolerance, in percent.
        tolerance: f64,
        /// The value aimed at.
        of: Value,
    },
}

impl Bound {
    /// Whether `seen` (on the scale of [`Value::scalar`]) satisfies it.
    pub fn holds(self, seen: f64) -> bool {
        match self {
            Bound::Cmp(op, value) => {
                let v = value.scalar();
                match op {
                    Op::Ge => seen >= v,
                    Op::Le => seen <= v,
                    Op::Eq => seen == v,
                    Op::Gt => seen > v,
                    Op::Lt => seen < v,
                }
            }
            Bound::Within { tolerance, of } => {
                let v = of.scalar();
                // `tolerance * v / 100` keeps whole figures exact (5% of 600 is 30).
                (seen - v).abs() <= tolerance * v.abs() / 100.0
            }
        }
    }

    /// An upper bound (`<=`, `<`): it holds vacuously when nothing was seen.
    pub fn is_upper(self) -> bool {
        matches!(self, Bound::Cmp(Op::Le | Op::Lt, _))
    }
}

/// A path glob (`/inventory/*`) with the same syntax as a fault's `match`.
#[derive(Debug, Clone)]
pub struct PathGlob {
    /// The compiled matcher (a path-only [`HttpMatch`]).
    matcher: HttpMatch,
}

impl PathGlob {
    /// Compiles `glob`; the error says why it is not a path glob.
    pub fn new(glob: &str) -> Result<PathGlob, String> {
        HttpMatch::path(glob).map(|matcher| PathGlob { matcher })
    }

    /// The glob as written.
    pub fn as_str(&self) -> &str {
        self.matcher.path_glob().unwrap_or_default()
    }

    /// Whether `path` matches.
    pub fn is_match(&self, path: &str) -> bool {
        self.matcher
            .matches(&http::Method::GET, path, &http::HeaderMap::new())
    }
}

impl PartialEq for PathGlob {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}
