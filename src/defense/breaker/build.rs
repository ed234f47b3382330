//! From a model's configuration to a running decision model: the one
//! place that knows every model, above both the configuration and the
//! models.

use super::config::ModelConfig;
use super::consecutive::ConsecutiveModel;
use super::model::Model;
use super::opossum::OpossumModel;
use super::ratio::RatioModel;
use super::window::WindowModel;
use crate::clock::Instant;

impl ModelConfig {
    /// A fresh decision model of this kind; journal times count from
    /// `run_start`.
    pub(crate) fn start(&self, run_start: Instant) -> Box<dyn Model> {
        match self {
            ModelConfig::Window(c) => Box::new(WindowModel::new(c.clone(), run_start)),
            ModelConfig::Consecutive(c) => Box::new(ConsecutiveModel::new(c.clone())),
            ModelConfig::Ratio(c) => Box::new(RatioModel::new(c.clone(), run_start)),
            ModelConfig::Opossum(c) => Box::new(OpossumModel::new(c.clone(), run_start)),
        }
    }
}
