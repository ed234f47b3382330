//! The proxy's two modes, and which faults work in which.

use crate::fault::Fault;
use crate::schema::SchemaError;

/// Which protocol the proxy speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProxyMode {
    /// Byte streams: every fault that acts on a connection.
    Tcp,
    /// HTTP/1.1 requests: per-request faults, status injection.
    Http,
}

impl ProxyMode {
    /// The mode of `firedrill proxy` without `--mode`, and the one
    /// `firedrill validate` checks a fault file against by default.
    pub const DEFAULT: ProxyMode = ProxyMode::Tcp;

    /// Both modes, in the order the command line lists them.
    pub const ALL: [ProxyMode; 2] = [ProxyMode::Tcp, ProxyMode::Http];

    /// The name used on the command line and in messages.
    pub fn name(self) -> &'static str {
        match self {
            ProxyMode::Tcp => "tcp",
            ProxyMode::Http => "http",
        }
    }

    /// Every fault of a top-level `faults:` list (a fault file's or an
    /// experiment's) that does not work in this mode, in order.
    pub fn misfits(self, faults: &[Fault]) -> impl Iterator<Item = Misfit> + '_ {
        faults.iter().enumerate().filter_map(move |(index, fault)| {
            let (fits, needed) = match self {
                ProxyMode::Tcp => (fault.kind.works_in_tcp(), ProxyMode::Http),
                ProxyMode::Http => (fault.kind.works_in_http(), ProxyMode::Tcp),
            };
            // A kind that works in both modes but for one parameter.
            let kind = (fault.kind.http_only_parameter()).unwrap_or(fault.kind.key());
            (!fits).then_some(Misfit {
                index,
                kind,
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
    /// Its kind's key, e.g. `slicer` (or the key of the parameter that
    /// needs the other mode, `reset.code`, `latency.per`).
    pub kind: &'static str,
    /// The mode it needs instead.
    pub needed: ProxyMode,
}

impl Misfit {
    /// The error at the fault's kind key (`faults[i].slicer`) of `text`.
    pub fn error(&self, file: &str, text: &str, message: String) -> SchemaError {
        let at = crate::fault::fault_path(self.index, Some(self.kind));
        SchemaError::at(file, text, &at, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::FaultFile;

    fn faults(yaml: &str) -> Vec<Fault> {
        crate::schema::from_yaml_str::<FaultFile>("faults.yaml", yaml)
            .unwrap()
            .faults
    }

    #[test]
    fn a_status_fault_misfits_tcp_and_needs_http() {
        let list = faults(
            "faults:\n  - { name: slow, latency: { delay: 1s } }\n  - { name: down, status: { code: 503 } }\n",
        );
        let misfit = ProxyMode::Tcp
            .misfits(&list)
            .next()
            .expect("status needs http");
        assert_eq!(
            (misfit.index, misfit.kind, misfit.needed),
            (1, "status", ProxyMode::Http)
        );
        assert_eq!(ProxyMode::Http.misfits(&list).next(), None);
    }

    #[test]
    fn a_byte_stream_fault_misfits_http_and_needs_tcp() {
        let list = faults("faults:\n  - { name: chop, slicer: { average_size: 10 } }\n");
        let misfit = ProxyMode::Http
            .misfits(&list)
            .next()
            .expect("slicer needs tcp");
        assert_eq!(
            (misfit.index, misfit.kind, misfit.needed),
            (0, "slicer", ProxyMode::Tcp)
        );
        assert_eq!(ProxyMode::Tcp.misfits(&list).next(), None);
    }

    #[test]
    fn a_misfit_error_points_at_the_kind_key() {
        let text = "faults:\n  - name: chop\n    slicer: { average_size: 10 }\n";
        let misfit = ProxyMode::Http.misfits(&faults(text)).next().unwrap();
        let err = misfit.error("f.yaml", text, "needs tcp".to_string());
        assert_eq!((err.line, err.key.as_str()), (3, "faults[0].slicer"));
    }

    #[test]
    fn modes_are_named_as_on_the_command_line() {
        let names: Vec<&str> = ProxyMode::ALL.iter().map(|m| m.name()).collect();
        assert_eq!(names, ["tcp", "http"]);
    }
}
