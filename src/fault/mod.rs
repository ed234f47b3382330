//! The fault catalogue (`docs/reference.md`, Fault file) as data, and the
//! plan that decides, for each connection or request, which faults hit it.

pub mod matcher;
pub mod plan;
pub mod spec;
pub mod window;

pub use matcher::HttpMatch;
pub use plan::{ConnectionRolls, FaultPlan, Hit, Snapshot};
pub use spec::{Direction, Fault, FaultFile, FaultKind};
pub use window::{Pattern, Window};
