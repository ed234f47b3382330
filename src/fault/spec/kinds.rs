//! The fault kinds: what each does, and the one table of their YAML keys
//! and the proxy modes they act in.

use super::params::{
    Bandwidth, Cut, GrpcFault, Latency, LimitData, Slicer, SlowClose, StatusFault,
};
use super::raw::RawFault;
use crate::fault::replay::Replay;

/// What a fault does.
#[derive(Debug, Clone, PartialEq)]
pub enum FaultKind {
    /// Delay data (TCP) or the request/response (HTTP).
    Latency(Latency),
    /// Answer with this status instead of calling the target (HTTP only).
    Status(StatusFault),
    /// Fail a gRPC call at once with this status (HTTP only).
    Grpc(GrpcFault),
    /// Close with RST.
    Reset(Cut),
    /// Close cleanly with FIN (before the response, or truncating it).
    Close(Cut),
    /// Accept and never answer.
    Blackhole,
    /// Refuse new connections while active.
    Refuse,
    /// Limit throughput.
    Bandwidth(Bandwidth),
    /// Delay the close of a connection (TCP only).
    SlowClose(SlowClose),
    /// Cut data into small pieces with delays (TCP only).
    Slicer(Slicer),
    /// Close the connection after this many bytes (TCP only).
    LimitData(LimitData),
    /// Answer as a recording did, second by second (HTTP only).
    Replay(Replay),
    /// End the client connection gracefully after the requests in flight
    /// (HTTP/2: GOAWAY; HTTP/1.1: `Connection: close`); HTTP only.
    GoAway,
}

impl FaultKind {
    /// This kind's row in [`KINDS`]: its key and the proxy modes it acts in.
    pub fn info(&self) -> &'static KindInfo {
        KINDS
            .iter()
            .find(|row| (row.is)(self))
            .expect("every fault kind has a row in KINDS")
    }

    /// The YAML key of this kind.
    pub fn key(&self) -> &'static str {
        self.info().key
    }

    /// Whether the kind acts in TCP mode (`status` needs HTTP).
    pub fn works_in_tcp(&self) -> bool {
        self.info().modes.tcp() && self.http_only_parameter().is_none()
    }

    /// The parameter that needs HTTP mode in a kind that otherwise works in
    /// both, as its key path: a reset's HTTP/2 error code ends a stream
    /// (`reset.code`), a latency per gRPC message (`latency.per`).
    pub fn http_only_parameter(&self) -> Option<&'static str> {
        match self {
            FaultKind::Reset(cut) if cut.code.is_some() => Some("reset.code"),
            FaultKind::Latency(l) if l.per == super::params::Per::Message => Some("latency.per"),
            _ => None,
        }
    }

    /// Whether the kind acts in HTTP mode (the byte-stream faults need TCP).
    pub fn works_in_http(&self) -> bool {
        self.info().modes.http()
    }
}

/// The proxy modes something acts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modes {
    /// TCP and HTTP.
    Both,
    /// TCP only: it acts on the byte stream.
    TcpOnly,
    /// HTTP only: it acts on requests and responses.
    HttpOnly,
}

impl Modes {
    /// Whether it acts in TCP mode.
    pub const fn tcp(self) -> bool {
        !matches!(self, Modes::HttpOnly)
    }

    /// Whether it acts in HTTP mode.
    pub const fn http(self) -> bool {
        !matches!(self, Modes::TcpOnly)
    }
}

/// One fault kind: a row of [`KINDS`].
#[derive(Debug, Clone, Copy)]
pub struct KindInfo {
    /// The key that names the kind in a fault entry, e.g. `latency`.
    pub key: &'static str,
    /// The proxy modes the kind acts in.
    pub modes: Modes,
    /// Whether a [`FaultKind`] is this kind.
    pub(super) is: fn(&FaultKind) -> bool,
    /// Takes this kind's parameters out of an entry as written, if present.
    pub(super) take: fn(&mut RawFault) -> Option<FaultKind>,
}

/// Every fault kind, in the order of [`RawFault`]'s kind fields: the one
/// list of kind names and their proxy modes, read by `key`, `works_in_*`,
/// the loader, its messages and the schema (tests fail until they agree).
pub const KINDS: &[KindInfo] = &[
    KindInfo {
        key: "latency",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Latency(_)),
        take: |r| r.latency.take().map(FaultKind::Latency),
    },
    KindInfo {
        key: "status",
        modes: Modes::HttpOnly,
        is: |k| matches!(k, FaultKind::Status(_)),
        take: |r| r.status.take().map(FaultKind::Status),
    },
    KindInfo {
        key: "reset",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Reset(_)),
        take: |r| r.reset.take().map(FaultKind::Reset),
    },
    KindInfo {
        key: "close",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Close(_)),
        take: |r| r.close.take().map(FaultKind::Close),
    },
    KindInfo {
        key: "blackhole",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Blackhole),
        take: |r| r.blackhole.take().map(|_| FaultKind::Blackhole),
    },
    KindInfo {
        key: "refuse",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Refuse),
        take: |r| r.refuse.take().map(|_| FaultKind::Refuse),
    },
    KindInfo {
        key: "bandwidth",
        modes: Modes::Both,
        is: |k| matches!(k, FaultKind::Bandwidth(_)),
        take: |r| r.bandwidth.take().map(FaultKind::Bandwidth),
    },
    KindInfo {
        key: "slow_close",
        modes: Modes::TcpOnly,
        is: |k| matches!(k, FaultKind::SlowClose(_)),
        take: |r| r.slow_close.take().map(FaultKind::SlowClose),
    },
    KindInfo {
        key: "slicer",
        modes: Modes::TcpOnly,
        is: |k| matches!(k, FaultKind::Slicer(_)),
        take: |r| r.slicer.take().map(FaultKind::Slicer),
    },
    KindInfo {
        key: "limit_data",
        modes: Modes::TcpOnly,
        is: |k| matches!(k, FaultKind::LimitData(_)),
        take: |r| r.limit_data.take().map(FaultKind::LimitData),
    },
    KindInfo {
        key: "replay",
        modes: Modes::HttpOnly,
        is: |k| matches!(k, FaultKind::Replay(_)),
        take: |r| r.replay.take().map(FaultKind::Replay),
    },
    KindInfo {
        key: "grpc",
        modes: Modes::HttpOnly,
        is: |k| matches!(k, FaultKind::Grpc(_)),
        take: |r| r.grpc.take().map(FaultKind::Grpc),
    },
    KindInfo {
        key: "goaway",
        modes: Modes::HttpOnly,
        is: |k| matches!(k, FaultKind::GoAway),
        take: |r| r.goaway.take().map(|_| FaultKind::GoAway),
    },
];

/// The kind keys, in the order of [`KINDS`].
pub fn kind_keys() -> impl Iterator<Item = &'static str> {
    KINDS.iter().map(|row| row.key)
}
