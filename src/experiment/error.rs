//! Why a run could not start or go on: the error `firedrill run` maps to
//! exit 3, naming the part (and, for the topology, the key) at fault.

/// Why a run could not start or go on (exit 3).
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The tokio runtime could not be built.
    #[error("cannot start the runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// No free port for one of the run's servers.
    #[error("cannot listen on a free 127.0.0.1 port: {0}")]
    Listen(#[source] std::io::Error),
    /// `target.url` does not resolve.
    #[error("target.url {url}: cannot resolve: {source}")]
    TargetResolve {
        /// The URL as written.
        url: String,
        /// The resolver's error.
        #[source]
        source: std::io::Error,
    },
    /// `target.url` refused the first connection.
    #[error("target.url {url}: unreachable at start: {source}")]
    TargetUnreachable {
        /// The URL as written.
        url: String,
        /// The connection error.
        #[source]
        source: std::io::Error,
    },
    /// A part of the topology (a dependency's listen address or upstream,
    /// the service) could not be set up.
    #[error("{key}: {message}: {source}")]
    Topology {
        /// The experiment key at fault, e.g. `dependencies.inventory.listen`.
        key: String,
        /// What could not be done.
        message: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// What the experiment names at `key` could not be reached or set up:
    /// an agent (a fault proxy on another host), Locust.
    #[error("{key}: {message}")]
    At {
        /// The experiment key at fault, e.g. `dependencies.inventory.agent.api`.
        key: String,
        /// What went wrong, naming the agent.
        message: String,
    },
    /// `--metrics-listen` could not be bound.
    #[error("--metrics-listen {addr}: cannot bind: {source}")]
    MetricsBind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `--control` could not be bound.
    #[error("--control {addr}: cannot bind: {source}")]
    ControlBind {
        /// The address asked for.
        addr: std::net::SocketAddr,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A pool server of the defense line cannot be reached (an
    /// `instance:` no target instance has).
    #[error("defense.{0}")]
    PoolServer(String),
    /// The user's service (`system.url`) answered none of the load's
    /// requests: the run cannot be judged.
    #[error("system.url {url}: the service under test did not answer: {seen}")]
    Unanswered {
        /// The service's URL as written.
        url: String,
        /// What the requests got instead.
        seen: String,
    },
    /// A record sink (`requests.jsonl`) could not be written.
    #[error("cannot write the requests of the run: {0}")]
    Records(#[source] std::io::Error),
}

impl RunError {
    /// The experiment key an error is about and its message without it
    /// (`dependencies.inventory.listen`, `system.url`), for the command
    /// line to point at the key's line and column; none for the others.
    pub fn at_key(&self) -> Option<(&str, String)> {
        match self {
            RunError::Topology {
                key,
                message,
                source,
            } => Some((key, format!("{message}: {source}"))),
            RunError::At { key, message } => Some((key, message.clone())),
            RunError::Unanswered { url, seen } => Some((
                "system.url",
                format!("{url}: the service under test did not answer: {seen}"),
            )),
            _ => None,
        }
    }
}
