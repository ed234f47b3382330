//! The team's own monitoring as a judge: a Prometheus server's API
//! ([`client`]), checked for reachability before the clock starts
//! ([`check_sources`]), and the `query` sentences judged on it after the
//! run ([`judge`]); `halt:` sentences read from it while the drill runs
//! ([`halt`]); each judged query's series over the run, for the page
//! ([`series`]).

pub mod client;
pub mod halt;
pub mod judge;
pub mod series;

use crate::experiment::config::Experiment;
use crate::experiment::error::RunError;

/// Every `prometheus:` source answers its API with the drill's headers and
/// token, before the clock starts; the first that does not is a located
/// error (exit 3). A virtual-time run cannot query one: its times are not
/// the wall clock's.
pub async fn check_sources(experiment: &Experiment, wall_clock: bool) -> Result<(), RunError> {
    if experiment.prometheus.is_empty() {
        return Ok(());
    }
    if !wall_clock {
        return Err(RunError::At {
            key: "prometheus".to_string(),
            message: "querying a real Prometheus needs `clock: real` (this run's clock is virtual: its times are not the wall clock's)".to_string(),
        });
    }
    for source in &experiment.prometheus {
        let checked = match client::PromClient::new(source).await {
            Ok(c) => c.check().await,
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            return Err(RunError::At {
                key: format!("prometheus.{}.url", source.name),
                message: format!("{}: Prometheus unreachable at start: {e}", source.url),
            });
        }
    }
    Ok(())
}
