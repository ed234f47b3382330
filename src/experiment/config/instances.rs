//! The built-in target's instances: several fixture servers standing for
//! one dependency, each with its own routes and its own fault proxy, so a
//! drill can take instance b down while a and c stay up.
//!
//! ```yaml
//! target:
//!   builtin:
//!     routes:                          # answered by every instance
//!       - { path: /inventory/*, latency: 20ms }
//!     instances:                       # name → its own routes, tried first
//!       a: {}
//!       b: { routes: [{ path: /inventory/*, status: 500 }] }
//!       c: { routes: [{ path: /health, body: "error\n" }] }
//! faults:
//!   - { name: b-down, instance: b, status: { code: 503 }, at: 10s, for: 20s }
//! ```
//!
//! Every instance answers `GET /health` with 200 `ok` unless one of its
//! routes matches `/health`. A fault with `instance:` is applied by that
//! instance's proxy only; one without, by every instance's. Until a pool
//! spreads the calls, the load (or the defense line) calls the first
//! instance in name order.

use std::collections::BTreeMap;

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer};

use crate::experiment::config::system::one_of;
use crate::fault::Fault;
use crate::schema::deserialize_checked;
use crate::target::TargetRoute;

/// The embedded fixture server: one instance, or several by name.
#[derive(Debug, Clone, Default)]
pub struct BuiltinTarget {
    /// Routes every instance answers, after its own ones (a target without
    /// instances answers these alone).
    pub routes: Vec<TargetRoute>,
    /// The instances by name, in name order, each with its own routes;
    /// empty: one instance, unnamed.
    pub instances: BTreeMap<String, Vec<TargetRoute>>,
}

/// One fixture server to start: its instance name (none for a target
/// without instances) and the routes it answers before its fixed ones.
#[derive(Debug, Clone)]
pub struct InstanceServer {
    /// The instance's name; none when the target declares no instances.
    pub name: Option<String>,
    /// Its own routes, then the ones every instance shares.
    pub routes: Vec<TargetRoute>,
}

impl BuiltinTarget {
    /// The fixture servers to start, in name order: the first (the one the
    /// load calls until a pool spreads the calls) and the others; a target
    /// without instances has one, unnamed.
    pub fn servers(&self) -> (InstanceServer, Vec<InstanceServer>) {
        let mut servers = self.instances.iter().map(|(name, own)| InstanceServer {
            name: Some(name.clone()),
            routes: own.iter().chain(&self.routes).cloned().collect(),
        });
        let unnamed = || InstanceServer {
            name: None,
            routes: self.routes.clone(),
        };
        let first = servers.next().unwrap_or_else(unnamed);
        (first, servers.collect())
    }

    /// The instance names, in name order (none declared: empty).
    pub fn names(&self) -> Vec<&str> {
        self.instances.keys().map(String::as_str).collect()
    }
}

/// Whether a fault applies on the proxy of `instance` (none: the target
/// without instances): a fault naming no instance applies on every one.
pub fn applies_on(fault: &Fault, instance: Option<&str>) -> bool {
    fault.instance.is_none() || fault.instance.as_deref() == instance
}

/// Whether `name` is an instance name: lowercase letters, digits, `_` and
/// `-`, at least one.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '_' | '-'))
}

/// Checks every fault's `instance:` against the target's instances
/// (`names`, empty when it has none): the first problem, located at the
/// fault's key.
pub fn check_fault_instances(faults: &[Fault], names: &[&str]) -> Result<(), String> {
    for (i, f) in faults.iter().enumerate() {
        let Some(instance) = &f.instance else {
            continue;
        };
        if names.is_empty() {
            return Err(format!(
                "faults[{i}].instance: `{instance}`: the target has no instances: declare them under target.builtin.instances, or leave `instance` out"
            ));
        }
        if !names.contains(&instance.as_str()) {
            return Err(format!(
                "faults[{i}].instance: unknown instance `{instance}`: expected one of {}",
                one_of(names)
            ));
        }
    }
    Ok(())
}

/// The embedded fixture server: routes, and perhaps several instances.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawBuiltin {
    /// Routes by path, each with its latency, status and body; with
    /// `instances`, answered by every instance after its own routes.
    #[serde(default)]
    routes: Vec<TargetRoute>,
    /// Several instances of the target by name (lowercase letters, digits,
    /// `_`, `-`), each a fixture server with its own routes (tried before
    /// the shared `routes`) behind its own fault proxy; faults name one
    /// with `instance:`. The load calls the first instance in name order.
    #[serde(default)]
    #[schemars(extend("propertyNames" = { "pattern": "^[a-z0-9_-]+$" }, "minProperties" = 1))]
    instances: Option<IndexMap<String, RawInstance>>,
}

/// One instance of the built-in target.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(
    deny_unknown_fields,
    expecting = "an instance: a mapping such as `{ routes: [...] }` (`{}` for none)"
)]
struct RawInstance {
    /// This instance's own routes, tried before the ones every instance
    /// shares; a route on `/health` overrides its default 200 `ok`.
    #[serde(default)]
    routes: Vec<TargetRoute>,
}

impl TryFrom<RawBuiltin> for BuiltinTarget {
    type Error = String;

    fn try_from(raw: RawBuiltin) -> Result<Self, String> {
        let Some(declared) = raw.instances else {
            return Ok(BuiltinTarget {
                routes: raw.routes,
                instances: BTreeMap::new(),
            });
        };
        if declared.is_empty() {
            return Err(
                "instances: expected at least one instance (a name and its routes), or leave `instances` out"
                    .to_string(),
            );
        }
        let mut instances = BTreeMap::new();
        for (name, instance) in declared {
            if !valid_name(&name) {
                return Err(format!(
                    "instances: `{name}`: expected an instance name of lowercase letters, digits, `_` and `-`, e.g. `a` or `inventory-2`"
                ));
            }
            instances.insert(name, instance.routes);
        }
        Ok(BuiltinTarget {
            routes: raw.routes,
            instances,
        })
    }
}

impl<'de> Deserialize<'de> for BuiltinTarget {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawBuiltin, BuiltinTarget>(d)
    }
}

crate::schema_via!(BuiltinTarget, RawBuiltin, "BuiltinTarget");

#[cfg(test)]
mod tests {
    use super::*;

    fn target(yaml: &str) -> Result<BuiltinTarget, String> {
        crate::schema::from_yaml_str::<BuiltinTarget>("t.yaml", yaml).map_err(|e| e.to_string())
    }

    fn statuses(server: &InstanceServer) -> Vec<u16> {
        server.routes.iter().map(|r| r.status).collect()
    }

    #[test]
    fn routes_alone_make_one_unnamed_instance() {
        let t = target("routes: [{ path: /a/*, status: 500 }]").unwrap();
        let (first, others) = t.servers();
        assert!(others.is_empty());
        assert_eq!(first.name, None);
        assert_eq!(statuses(&first), [500]);
        assert!(t.names().is_empty());
    }

    #[test]
    fn instances_come_in_name_order_with_their_own_routes_before_the_shared_ones() {
        let t = target(
            "routes: [{ path: /a/*, status: 201 }]\n\
             instances:\n  c: {}\n  a: { routes: [{ path: /a/*, status: 500 }] }\n  b: {}\n",
        )
        .unwrap();
        assert_eq!(t.names(), ["a", "b", "c"]);
        let (first, others) = t.servers();
        assert_eq!(first.name.as_deref(), Some("a"));
        assert_eq!(statuses(&first), [500, 201]);
        let names: Vec<_> = others.iter().map(|s| s.name.as_deref()).collect();
        assert_eq!(names, [Some("b"), Some("c")]);
        assert_eq!(statuses(&others[0]), [201]);
    }

    #[test]
    fn an_empty_instances_mapping_is_refused_at_its_key() {
        let e = target("instances: {}\n").unwrap_err();
        assert!(
            e.contains("1:12") && e.contains("instances: expected at least one instance"),
            "{e}"
        );
    }

    #[test]
    fn a_name_outside_lowercase_digits_underscore_dash_is_refused_at_the_mapping() {
        for bad in ["B", "a.b", "\"a b\"", "\"\""] {
            let e = target(&format!("instances:\n  ok-1_x: {{}}\n  {bad}: {{}}\n")).unwrap_err();
            assert!(
                e.contains("2:3") && e.contains("expected an instance name of lowercase"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn an_unknown_key_in_an_instance_is_refused_where_it_is() {
        let e = target("instances:\n  a: { latency: 5ms }\n").unwrap_err();
        assert!(
            e.contains("2:8") && e.contains("unknown field `latency`"),
            "{e}"
        );
    }

    fn fault(yaml: &str) -> Fault {
        crate::schema::from_yaml_str("f.yaml", yaml).unwrap()
    }

    #[test]
    fn a_fault_without_instance_applies_on_every_instance_and_one_with_on_that_one_only() {
        let everywhere = fault("{ status: { code: 503 } }");
        let on_b = fault("{ instance: b, status: { code: 503 } }");
        for instance in [None, Some("a"), Some("b")] {
            assert!(applies_on(&everywhere, instance));
        }
        assert!(applies_on(&on_b, Some("b")));
        assert!(!applies_on(&on_b, Some("a")));
        assert!(!applies_on(&on_b, None));
    }

    #[test]
    fn a_fault_naming_an_unknown_instance_or_any_instance_of_a_target_without_them_is_refused() {
        let faults = [
            fault("{ status: { code: 503 } }"),
            fault("{ instance: x, status: { code: 503 } }"),
        ];
        assert_eq!(check_fault_instances(&faults[..1], &[]), Ok(()));
        assert_eq!(
            check_fault_instances(&faults, &["a", "b"]),
            Err("faults[1].instance: unknown instance `x`: expected one of a, b".to_string())
        );
        let none = check_fault_instances(&faults, &[]).unwrap_err();
        assert!(
            none.starts_with("faults[1].instance: `x`: the target has no instances"),
            "{none}"
        );
        assert_eq!(check_fault_instances(&faults[1..], &["x"]), Ok(()));
    }
}
