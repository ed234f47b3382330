//! `recovery:` of the ratio model as written in YAML: `single_probe`,
//! `progressive`, or `{ progressive: { ... } }`, read by hand.

use serde::Deserialize;

use crate::schema::units::Dur;

/// `recovery: { progressive: ... }` — traffic let through in phases.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawProgressive {
    /// Number of phases.
    #[schemars(range(min = 1))]
    pub(super) phases: Option<u32>,
    /// Successful calls each phase needs before the next.
    #[schemars(range(min = 1))]
    pub(super) min_passes_per_phase: Option<u32>,
    /// Length of each phase.
    pub(super) phase_duration: Option<Dur>,
}

/// `single_probe`, `progressive`, or `{ progressive: { ... } }`.
impl schemars::JsonSchema for RawRecovery {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Recovery".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let progressive = generator.subschema_for::<RawProgressive>();
        schemars::json_schema!({
            "description": format!("How the ratio model recovers: {RECOVERY_EXPECTED}."),
            "anyOf": [
                { "enum": ["single_probe", "progressive"] },
                {
                    "type": "object",
                    "properties": { "progressive": progressive },
                    "required": ["progressive"],
                    "additionalProperties": false,
                },
            ],
        })
    }
}

/// `recovery:` — `single_probe`, `progressive` (all defaults), or
/// `{ progressive: { phases: 3, ... } }`. Read by hand because
/// serde_yaml_ng wants a `!progressive` tag for an enum variant with data.
#[derive(Debug)]
pub(crate) enum RawRecovery {
    SingleProbe,
    Progressive(RawProgressive),
}

const RECOVERY_EXPECTED: &str = "`single_probe`, `progressive` or a mapping `progressive: { phases, min_passes_per_phase, phase_duration }`";

impl<'de> Deserialize<'de> for RawRecovery {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{Error, MapAccess, Visitor};
        struct RecoveryVisitor;
        impl<'de> Visitor<'de> for RecoveryVisitor {
            type Value = RawRecovery;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(RECOVERY_EXPECTED)
            }
            fn visit_str<E: Error>(self, v: &str) -> Result<RawRecovery, E> {
                match v {
                    "single_probe" => Ok(RawRecovery::SingleProbe),
                    "progressive" => Ok(RawRecovery::Progressive(RawProgressive {
                        phases: None,
                        min_passes_per_phase: None,
                        phase_duration: None,
                    })),
                    other => Err(E::custom(format!(
                        "unknown recovery `{other}`, expected {RECOVERY_EXPECTED}"
                    ))),
                }
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRecovery, A::Error> {
                let key: String = map
                    .next_key()?
                    .ok_or_else(|| A::Error::custom(format!("expected {RECOVERY_EXPECTED}")))?;
                if key != "progressive" {
                    return Err(A::Error::custom(format!(
                        "unknown recovery `{key}`, expected {RECOVERY_EXPECTED}"
                    )));
                }
                let progressive: RawProgressive = map.next_value()?;
                if map.next_key::<String>()?.is_some() {
                    return Err(A::Error::custom("give exactly one recovery policy"));
                }
                Ok(RawRecovery::Progressive(progressive))
            }
        }
        d.deserialize_any(RecoveryVisitor)
    }
}
