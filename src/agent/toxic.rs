//! An experiment's fault as the toxic an agent applies while its window is
//! open: on a firedrill agent an `http_fault` toxic carrying the fault's
//! entry as written (every kind, its match and probability), on a real
//! Toxiproxy the byte-stream toxic that does the same, or why there is
//! none.

use serde_json::{Value, json};

use super::AgentKind;
use crate::fault::{Direction, Fault, FaultKind};

/// The keys of a fault entry that are the drill's, not the agent's: when
/// and where it applies.
const DRILL_KEYS: &[&str] = &["name", "at", "for", "pattern", "dependency", "instance"];

/// The toxic (`{name, type, stream, toxicity, attributes}`, without a
/// lease) that applies `fault` on an agent of `kind`; `raw` is its entry as
/// written. An error says what the agent cannot do.
pub fn toxic_for(fault: &Fault, raw: &Value, kind: AgentKind) -> Result<Value, String> {
    let Value::Object(entry) = raw else {
        return Err("a fault entry must be a mapping".to_string());
    };
    if matches!(fault.kind, FaultKind::Replay(_)) {
        return Err(
            "a replayed recording is read on this machine; it cannot be applied by an agent"
                .to_string(),
        );
    }
    match kind {
        AgentKind::Firedrill => {
            let spec: serde_json::Map<String, Value> = entry
                .iter()
                .filter(|(k, _)| !DRILL_KEYS.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Ok(json!({
                "name": fault.name,
                "type": "http_fault",
                "attributes": { "spec": Value::Object(spec).to_string() },
            }))
        }
        AgentKind::Toxiproxy => toxiproxy(fault, entry),
    }
}

/// The Toxiproxy toxic for `fault`.
fn toxiproxy(fault: &Fault, entry: &serde_json::Map<String, Value>) -> Result<Value, String> {
    let cannot = |what: &str| {
        Err(format!(
            "{what}: a Toxiproxy agent cannot apply it (it acts on byte streams, not HTTP requests); run firedrill server there"
        ))
    };
    for key in ["match", "after_idle"] {
        if entry.contains_key(key) {
            return cannot(&format!("`{key}`"));
        }
    }
    let stream = |d: Direction| match d {
        Direction::Upstream => "upstream",
        Direction::Downstream => "downstream",
    };
    let ms = |d: crate::clock::Duration| d.as_millis() as u64;
    let (kind, stream, attributes) = match &fault.kind {
        FaultKind::Latency(l) => (
            "latency",
            stream(l.direction),
            json!({ "latency": ms(l.delay.get()), "jitter": ms(l.jitter.get()) }),
        ),
        FaultKind::Bandwidth(b) => (
            "bandwidth",
            stream(b.direction),
            json!({ "rate": (b.rate.bytes_per_second() / 1000.0).max(1.0) as u64 }),
        ),
        FaultKind::Reset(cut) if cut.after_bytes.is_none() && cut.code.is_none() => (
            "reset_peer",
            "downstream",
            json!({ "timeout": cut.after.map_or(0, |a| ms(a.get())) }),
        ),
        FaultKind::Blackhole => ("timeout", "downstream", json!({ "timeout": 0 })),
        FaultKind::Close(cut) if cut.after_bytes.is_none() && cut.after.is_some() => (
            "timeout",
            "downstream",
            json!({ "timeout": cut.after.map_or(0, |a| ms(a.get())) }),
        ),
        other => return cannot(&format!("`{}` as written", other.key())),
    };
    Ok(json!({
        "name": fault.name,
        "type": kind,
        "stream": stream,
        "toxicity": fault.probability.fraction(),
        "attributes": attributes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(yaml: &str) -> (Fault, Value) {
        let fault: Fault = crate::schema::from_yaml_str("t.yaml", yaml).unwrap();
        let raw: serde_yaml_ng::Value = serde_yaml_ng::from_str(yaml).unwrap();
        (fault, serde_json::to_value(raw).unwrap())
    }

    #[test]
    fn a_firedrill_agent_gets_the_entry_as_written_without_the_drill_s_keys() {
        let (f, raw) = fault(
            "{ name: s, dependency: inv, at: 2s, for: 1s, match: /inv/*, probability: 50%, status: { code: 500 } }",
        );
        let toxic = toxic_for(&f, &raw, AgentKind::Firedrill).unwrap();
        assert_eq!(toxic["type"], "http_fault");
        assert_eq!(toxic["name"], "s");
        let spec: Value =
            serde_json::from_str(toxic["attributes"]["spec"].as_str().unwrap()).unwrap();
        assert_eq!(
            spec,
            json!({ "match": "/inv/*", "probability": "50%", "status": { "code": 500 } })
        );
    }

    #[test]
    fn a_toxiproxy_agent_gets_the_byte_stream_toxic_with_the_probability_as_toxicity() {
        let (f, raw) =
            fault("{ name: slow, probability: 25%, latency: { delay: 300ms, jitter: 20ms } }");
        let toxic = toxic_for(&f, &raw, AgentKind::Toxiproxy).unwrap();
        assert_eq!(
            toxic,
            json!({ "name": "slow", "type": "latency", "stream": "downstream", "toxicity": 0.25,
                    "attributes": { "latency": 300, "jitter": 20 } })
        );
        let (f, raw) = fault("{ name: r, reset: {} }");
        assert_eq!(
            toxic_for(&f, &raw, AgentKind::Toxiproxy).unwrap()["type"],
            "reset_peer"
        );
        let (f, raw) = fault("{ name: b, blackhole: {} }");
        let toxic = toxic_for(&f, &raw, AgentKind::Toxiproxy).unwrap();
        assert_eq!(
            (&toxic["type"], &toxic["attributes"]["timeout"]),
            (&json!("timeout"), &json!(0))
        );
    }

    #[test]
    fn a_toxiproxy_agent_refuses_http_faults_a_match_and_a_replay_saying_why() {
        for yaml in [
            "{ name: s, status: { code: 503 } }",
            "{ name: l, match: /x, latency: { delay: 1s } }",
            "{ name: g, grpc: { status: UNAVAILABLE } }",
        ] {
            let (f, raw) = fault(yaml);
            let e = toxic_for(&f, &raw, AgentKind::Toxiproxy).unwrap_err();
            assert!(
                e.contains("a Toxiproxy agent cannot apply it"),
                "{yaml}: {e}"
            );
        }
    }
}
