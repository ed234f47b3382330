//! The journal's text and JSON shapes, and the legal edges.

use super::*;

#[test]
fn reasons_render_with_their_figures() {
    let cases = [
        (
            Reason::FailureRate {
                rate: 60.0,
                threshold: 50.0,
                calls: 10,
            },
            "failure_rate 60% >= 50% over 10 calls",
        ),
        (Reason::ProbesOk { ok: 3, needed: 3 }, "probes 3/3 ok"),
        (
            Reason::WaitElapsed {
                key: "wait_in_open",
                wait: Duration::from_secs(5),
            },
            "wait_in_open 5s elapsed",
        ),
        (
            Reason::Ratio {
                metric: "slow_ratio",
                ratio: 200.0 / 3.0,
                threshold: 50.0,
                requests: 3,
            },
            "slow_ratio 66.7% > 50% over 3 requests",
        ),
        (
            Reason::ConsecutiveFailures {
                failures: 5,
                threshold: 5,
            },
            "consecutive_failures 5 >= 5",
        ),
        (
            Reason::Manual {
                action: "force_open",
            },
            "force_open",
        ),
    ];
    for (reason, text) in cases {
        assert_eq!(reason.to_string(), text);
    }
}

#[test]
fn a_transition_is_one_json_line_with_text_and_figures() {
    let t = Transition {
        at: Duration::from_millis(12_500),
        breaker: "payments".into(),
        from: State::Closed,
        to: State::Open,
        reason: Reason::FailureRate {
            rate: 60.0,
            threshold: 50.0,
            calls: 10,
        },
    };
    let line = t.to_json_line();
    assert!(!line.contains('\n'));
    let v: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(v["at_ms"], 12500.0);
    assert!(v.get("at").is_none(), "one unit: milliseconds as numbers");
    assert_eq!(v["breaker"], "payments");
    assert_eq!(v["from"], "closed");
    assert_eq!(v["to"], "open");
    assert_eq!(v["reason"], "failure_rate 60% >= 50% over 10 calls");
    assert_eq!(v["figures"]["kind"], "failure_rate");
    assert_eq!(v["figures"]["calls"], 10);
}

#[test]
fn only_the_four_automatic_edges_are_legal_without_an_operator() {
    let auto = Reason::ProbesOk { ok: 1, needed: 1 };
    let manual = Reason::Manual { action: "reset" };
    let mut legal = Vec::new();
    for from in State::ALL {
        for to in State::ALL {
            if is_legal(from, to, &auto) {
                legal.push((from.as_str(), to.as_str()));
            }
            assert_eq!(
                is_legal(from, to, &manual),
                from != to,
                "{from} -> {to} by an operator"
            );
        }
    }
    assert_eq!(
        legal,
        [
            ("closed", "open"),
            ("open", "half_open"),
            ("half_open", "closed"),
            ("half_open", "open")
        ]
    );
}
