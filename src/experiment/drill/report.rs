//! The last stage, report: what a judged run is handed to. The drill
//! defines only the seam; the report files (`crate::report`) and a sweep's
//! points implement it, so the drill never depends on a format.

use super::collect::stream::RecordSink;
use super::judge::Judged;

/// Where a run reports: fed each request as it finishes, in id order,
/// then handed the judged run.
pub trait Report {
    /// What the report stage makes of the judged run.
    type Output;

    /// Where each request goes as it finishes, while the run goes (a run
    /// keeps none of them).
    fn sinks(&mut self) -> Vec<Box<dyn RecordSink>>;

    /// The report of the judged run.
    fn report(self, judged: Judged) -> Self::Output;
}
