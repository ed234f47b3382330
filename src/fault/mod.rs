//! The fault catalogue (`docs/reference.md`, Fault file) as data, and the
//! plan that decides, for each connection or request, which faults hit it.

pub mod matcher;
pub mod plan;
pub mod recordings;
pub mod replay;
pub mod spec;
pub mod window;

pub use matcher::HttpMatch;
pub use plan::{ConnectionRolls, FaultPlan, Hit, Snapshot};
pub use spec::{Direction, Fault, FaultFile, FaultKind};
pub use window::{Pattern, Window};

/// A name as a log field: control characters (a newline that would forge
/// a log line) escaped, the rest as it is.
#[derive(Debug, Clone, Copy)]
pub struct LogName<'a>(pub &'a str);

impl std::fmt::Display for LogName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in self.0.chars() {
            if c.is_control() || c == '\\' {
                write!(f, "{}", c.escape_default())?;
            } else {
                write!(f, "{c}")?;
            }
        }
        Ok(())
    }
}

/// The path of a top-level `faults:` list's item `index` (a fault file's or
/// an experiment's), and of its field `key` when given: where an error
/// about that fault is reported.
pub fn fault_path(index: usize, key: Option<&str>) -> Vec<crate::schema::Segment> {
    use crate::schema::Segment;
    let mut path = vec![Segment::Key("faults".to_string()), Segment::Index(index)];
    // A dotted key (`reset.code`) is a parameter under its kind.
    path.extend(
        key.into_iter()
            .flat_map(|k| k.split('.'))
            .map(|k| Segment::Key(k.to_string())),
    );
    path
}

/// The most faults a fault file or an experiment may hold: each is a
/// window on the timeline and a random stream of its own, checked on every
/// connection or request.
pub const MAX_FAULTS: usize = 1000;

/// What is wrong with `faults` (a fault file's or an experiment's) when
/// there are more than [`MAX_FAULTS`]; the error belongs at
/// `faults[MAX_FAULTS]`, the first fault over the limit.
pub fn too_many_faults(faults: &[Fault]) -> Option<String> {
    (faults.len() > MAX_FAULTS)
        .then(|| format!("{} faults: expected at most {MAX_FAULTS}", faults.len()))
}
