//! JSON Schemas of the YAML formats (experiment, fault file, defense
//! config), generated from the Rust types with `schemars`, for editors to
//! complete and check files with. This sits above the types it describes;
//! the pieces they are described with live in [`crate::schema::json`].
//!
//! Structs read by serde derive their schema from the same `Raw*` types
//! that deserialize them (so `deny_unknown_fields`, renames and defaults
//! cannot drift apart); the value types that parse by hand describe
//! themselves. The schema accepts a superset of what loads: cross-field
//! rules (one fault kind, phase order, names that expectations refer to)
//! are checked by `firedrill validate`, which also says where.

use schemars::Schema;
use schemars::generate::SchemaSettings;

/// The formats with a published schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `firedrill run` / `validate` experiment files.
    Experiment,
    /// `firedrill proxy --faults` fault files.
    Faults,
    /// `firedrill defend --config` defense configs.
    Defense,
}

impl Format {
    /// Every format, in the order they are documented.
    pub const ALL: [Format; 3] = [Format::Experiment, Format::Faults, Format::Defense];

    /// The file the schema is published as under `schema/`.
    pub fn file_name(self) -> &'static str {
        match self {
            Format::Experiment => "experiment.schema.json",
            Format::Faults => "faults.schema.json",
            Format::Defense => "defense.schema.json",
        }
    }

    /// The schema document (draft-07, what yaml-language-server reads best).
    pub fn schema(self) -> Schema {
        let generator = SchemaSettings::draft07().for_deserialize().into_generator();
        match self {
            Format::Experiment => {
                generator.into_root_schema_for::<crate::experiment::config::Experiment>()
            }
            Format::Faults => generator.into_root_schema_for::<crate::fault::FaultFile>(),
            Format::Defense => generator.into_root_schema_for::<crate::defense::DefenseConfig>(),
        }
    }

    /// The schema as pretty JSON with a trailing newline, as committed.
    pub fn render(self) -> String {
        let mut text = serde_json::to_string_pretty(&self.schema()).expect("a schema is JSON");
        text.push('\n');
        text
    }
}
