//! The proxy's two modes, and which faults work in which.

use crate::fault::Fault;
use crate::schema::{SchemaError, Segment};

/// Which protocol the proxy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyMode {
    /// Byte streams: every fault that acts on a connection.
    Tcp,
    /// HTTP/1.1 requests: per-request faults, status injection.
    Http,
}

impl ProxyMode {
    /// Both modes, in the order the command line lists them.
    pub const ALL: [ProxyMode; 2] = [ProxyMode::Tcp, ProxyMode::Http];

    /// The name used on the command line and in messages.
    pub fn name(self) -> &'static str {
        match self {
            ProxyMode::Tcp => "tcp",
            ProxyMode::Http => "http",
        }
    }

    /// The first fault of a top-level `faults:` list (a fault file's or an
    /// experiment's) that does not work in this mode.
    pub fn first_misfit(self, faults: &[Fault]) -> Option<Misfit> {
        faults.iter().enumerate().find_map(|(index, fault)| {
            let (fits, needed) = match self {
                ProxyMode::Tcp => (fault.kind.works_in_tcp(), ProxyMode::Http),
                ProxyMode::Http => (fault.kind.works_in_http(), ProxyMode::Tcp),
            };
            (!fits).then_some(Misfit {
                index,
                kind: fault.kind.key(),
                needed,
            })
        })
    }
}

/// A fault that does not work in the proxy mode it is meant for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Misfit {
    /// Its index in the top-level `faults:` list.
    pub index: usize,
    /// Its kind's key, e.g. `slicer`.
    pub kind: &'static str,
    /// The mode it needs instead.
    pub needed: ProxyMode,
}

impl Misfit {
    /// The error at the fault's kind key (`faults[i].slicer`) of `text`.
    pub fn error(&self, file: &str, text: &str, message: String) -> SchemaError {
        let at = [
            Segment::Key("faults".to_string()),
            Segment::Index(self.index),
            Segment::Key(self.kind.to_string()),
        ];
        SchemaError::at(file, text, &at, message)
    }
}
