//! JUnit XML: one test suite per experiment, one test case per expectation
//! (what CI systems consume), plus a case for a run that did not complete.

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::{Exporter, RunReport};
use crate::experiment::drill::Ending;

/// `junit.xml`.
#[derive(Debug)]
pub struct Junit;

impl Exporter for Junit {
    fn file_name(&self) -> &'static str {
        "junit.xml"
    }

    fn render(&self, report: &RunReport) -> std::io::Result<Vec<u8>> {
        let mut suite = TestSuite::new(report.experiment.as_str());
        for v in &report.verdicts {
            let status = if let Some(why) = &v.not_judged {
                let mut s = TestCaseStatus::skipped();
                s.set_message(format!("not judged: {why}"));
                s
            } else if let Some(why) = &v.inconclusive {
                // Neither a pass nor a failure: an error of the evidence,
                // which a CI run must not take for a pass.
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
                s.set_message(format!("inconclusive: {why}"));
                s.set_type("inconclusive");
                s.set_description(format!("would have seen {}", v.seen));
                s
            } else if v.passed {
                TestCaseStatus::success()
            } else {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(format!("expected {}; seen {}", v.expected, v.seen));
                s.set_type("expectation");
                if let Some(at) = v.at {
                    s.set_description(format!("at {:.3}s in the timeline", at.as_secs_f64()));
                }
                s
            };
            let mut case = TestCase::new(v.expectation.as_str(), status);
            case.set_classname(format!("firedrill.{}", report.experiment));
            // A query sentence that held: Prometheus's figure, so CI shows
            // how close it came.
            if v.passed && v.expectation.starts_with("query ") {
                case.set_system_out(format!("seen {}", v.seen));
            }
            suite.add_test_case(case);
        }
        // A run not healthy before injection says so in its steady-state
        // cases, first in the suite; a run cut short gets a case of its own.
        let cut = match &report.ending {
            Ending::Halted { condition, seen } => Some(format!(
                "halted: {condition} ({seen}), at {:.3}s",
                report.duration_ms / 1000.0
            )),
            Ending::Interrupted => Some(format!(
                "interrupted at {:.3}s",
                report.duration_ms / 1000.0
            )),
            Ending::NotHealthy { .. } | Ending::Completed => None,
        };
        if let Some(message) = cut {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(message);
            let mut case = TestCase::new("run completes", s);
            case.set_classname(format!("firedrill.{}", report.experiment));
            suite.add_test_case(case);
        }
        let time = std::time::Duration::from_secs_f64(report.duration_ms / 1000.0);
        suite.set_time(time);
        suite.add_property(("firedrill.version", report.version));
        suite.add_property(("firedrill.build", report.build));
        suite.add_property(("seed", report.seed.to_string().as_str()));
        suite.add_property(("clock", report.clock.name()));
        for target in &report.targets {
            suite.add_property(("target", target.as_str()));
        }
        if let Some(host) = &report.host {
            suite.add_property(("host", host.as_str()));
        }
        let mut junit = Report::new("firedrill");
        junit.set_time(time);
        // Real clock only: a virtual run's report is the same bytes every time.
        if let Some(at) = report
            .started_at_unix_ms
            .and_then(|ms| chrono::DateTime::from_timestamp_millis(ms as i64))
        {
            suite.set_timestamp(at);
            junit.set_timestamp(at);
        }
        junit.add_test_suite(suite);
        junit
            .to_string()
            .map(String::into_bytes)
            .map_err(std::io::Error::other)
    }
}
