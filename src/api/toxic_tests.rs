//! Toxics against Toxiproxy's defaults and firedrill's refusals, and every
//! type of the table mapped onto faults in the modes its row names.

use super::*;

fn input(json: &str) -> ToxicInput {
    serde_json::from_str(json).unwrap()
}

#[test]
fn defaults_follow_toxiproxy_name_stream_toxicity_and_zero_attributes() {
    let t = Toxic::create(input(r#"{"type":"latency"}"#), ProxyMode::Tcp).unwrap();
    assert_eq!(t.name, "latency_downstream");
    assert_eq!(t.stream, "downstream");
    assert_eq!(t.toxicity, 1.0);
    assert_eq!(
        serde_json::to_string(&t.attributes).unwrap(),
        r#"{"jitter":0,"latency":0}"#
    );
}

#[test]
fn toxicity_outside_zero_to_one_and_zero_slicer_size_are_refused() {
    let e = Toxic::create(input(r#"{"type":"noop","toxicity":1.5}"#), ProxyMode::Tcp).unwrap_err();
    assert_eq!(e.message, "toxicity: must be from 0 to 1, got 1.5");
    let e = Toxic::create(
        input(r#"{"type":"slicer","attributes":{"average_size":0}}"#),
        ProxyMode::Tcp,
    )
    .unwrap_err();
    assert!(
        e.message
            .starts_with("attributes.average_size: must be at least 1 byte"),
        "{}",
        e.message
    );
}

#[test]
fn timeout_and_reset_peer_hold_their_stream_in_tcp_and_act_per_request_in_http() {
    let faults = |json: &str, mode| {
        let t = Toxic::create(input(json), mode).unwrap();
        let f = t.faults(mode).unwrap();
        f.into_iter().map(|f| f.kind).collect::<Vec<_>>()
    };
    let half_second = Some(Dur(Duration::from_millis(500)));
    assert_eq!(
        faults(
            r#"{"type":"timeout","stream":"upstream","attributes":{"timeout":500}}"#,
            ProxyMode::Tcp
        ),
        [FaultKind::Close(Cut {
            after_bytes: None,
            after: half_second,
            code: None,
            stream: Some(Direction::Upstream)
        })]
    );
    assert_eq!(
        faults(r#"{"type":"reset_peer"}"#, ProxyMode::Tcp),
        [FaultKind::Reset(Cut {
            after_bytes: None,
            after: None,
            code: None,
            stream: Some(Direction::Downstream)
        })]
    );
    assert_eq!(
        faults(
            r#"{"type":"timeout","attributes":{"timeout":500}}"#,
            ProxyMode::Http
        ),
        [
            FaultKind::Blackhole,
            FaultKind::Close(Cut {
                after: half_second,
                ..Cut::default()
            })
        ]
    );
    assert_eq!(
        faults(r#"{"type":"reset_peer"}"#, ProxyMode::Http),
        [FaultKind::Reset(Cut::default())]
    );
}

#[test]
fn update_merges_attributes_and_toxicity_and_keeps_the_rest() {
    let t = Toxic::create(
        input(r#"{"type":"latency","name":"lag","attributes":{"latency":100,"jitter":5}}"#),
        ProxyMode::Tcp,
    )
    .unwrap();
    let u: ToxicUpdate =
        serde_json::from_str(r#"{"attributes":{"latency":300},"toxicity":0.5}"#).unwrap();
    let n = t.updated(u, ProxyMode::Tcp).unwrap();
    assert_eq!(n.attributes["latency"], 300);
    assert_eq!(n.attributes["jitter"], 5);
    assert_eq!(n.toxicity, 0.5);
    assert_eq!((n.name.as_str(), n.kind.as_str()), ("lag", "latency"));
}

#[test]
fn http_types_need_an_http_proxy_and_byte_stream_types_a_tcp_one() {
    let e = Toxic::create(input(r#"{"type":"http_status"}"#), ProxyMode::Tcp).unwrap_err();
    assert!(e.message.contains("\"mode\": \"http\""), "{}", e.message);
    let e = Toxic::create(
        input(r#"{"type":"slicer","attributes":{"average_size":10}}"#),
        ProxyMode::Http,
    )
    .unwrap_err();
    assert!(e.message.contains("tcp mode"), "{}", e.message);
    let ok = Toxic::create(
        input(r#"{"type":"http_status","attributes":{"code":502,"body":"x"}}"#),
        ProxyMode::Http,
    )
    .unwrap();
    assert_eq!(ok.faults(ProxyMode::Http).unwrap()[0].kind.key(), "status");
}

/// Attributes that make a toxic of `ty` valid where a zero default is
/// refused.
fn valid_attributes(ty: &ToxicType) -> Map<String, Value> {
    let json = match ty.name {
        "bandwidth" => r#"{"rate":1}"#,
        "slicer" => r#"{"average_size":1}"#,
        "http_fault" => r#"{"spec":"{\"status\": {\"code\": 503}}"}"#,
        _ => "{}",
    };
    serde_json::from_str(json).unwrap()
}

/// Creates a toxic of `ty` with its defaults, made valid, in `mode`.
fn create_default(ty: &ToxicType, mode: ProxyMode) -> Result<Toxic, ApiError> {
    let input = ToxicInput {
        kind: Some(ty.name.to_string()),
        attributes: Some(valid_attributes(ty)),
        ..ToxicInput::default()
    };
    Toxic::create(input, mode)
}

#[test]
fn every_type_shows_exactly_its_table_attributes_with_their_defaults() {
    for ty in TYPES {
        let mode = if ty.modes.tcp() {
            ProxyMode::Tcp
        } else {
            ProxyMode::Http
        };
        let t = create_default(ty, mode).unwrap();
        let mut expected: Map<String, Value> = ty
            .attributes
            .iter()
            .map(|(k, v)| (k.to_string(), v.value()))
            .collect();
        expected.extend(valid_attributes(ty));
        assert_eq!(t.attributes, expected, "{}", ty.name);
        assert_eq!(t.attributes.len(), ty.attributes.len(), "{}", ty.name);
    }
    let t = Toxic::create(input(r#"{"type":"http_status"}"#), ProxyMode::Http).unwrap();
    assert_eq!(
        serde_json::to_string(&t.attributes).unwrap(),
        r#"{"body":"","code":503}"#
    );
}

#[test]
fn every_type_converts_and_works_in_a_mode_exactly_when_its_table_row_says() {
    for ty in TYPES {
        for (mode, works) in [
            (ProxyMode::Tcp, ty.modes.tcp()),
            (ProxyMode::Http, ty.modes.http()),
        ] {
            let result = create_default(ty, mode);
            assert_eq!(result.is_ok(), works, "{} in {mode:?}: {result:?}", ty.name);
        }
    }
}

#[test]
fn http_types_are_the_http_only_ones_and_the_others_need_tcp_when_their_faults_do() {
    for ty in TYPES {
        let http_type = ty.name.starts_with("http_");
        assert_eq!(http_type, ty.modes == Modes::HttpOnly, "{}", ty.name);
        if http_type {
            continue;
        }
        let faults = create_default(ty, ProxyMode::Tcp)
            .and_then(|t| t.faults(ProxyMode::Tcp))
            .unwrap();
        let in_http = faults.iter().all(|f| f.kind.works_in_http());
        assert_eq!(ty.modes.http(), in_http, "{}", ty.name);
    }
}

/// The mode a type works in (TCP when it works in both).
fn mode_of(ty: &ToxicType) -> ProxyMode {
    if ty.modes.tcp() {
        ProxyMode::Tcp
    } else {
        ProxyMode::Http
    }
}

#[test]
fn every_number_attribute_beyond_go_int64_is_a_400_bad_body_and_int64_max_is_taken() {
    // Toxiproxy's attributes are Go `int`/`int64`: encoding/json refuses a
    // number above 2^63 - 1 with 400 "bad request body: ...".
    for ty in TYPES {
        for (key, default) in ty.attributes {
            if !matches!(default, Attribute::Number(_)) {
                continue;
            }
            for too_big in ["9223372036854775808", "18446744073709551615"] {
                let mut attributes = valid_attributes(ty);
                attributes.insert(key.to_string(), serde_json::from_str(too_big).unwrap());
                let input = ToxicInput {
                    kind: Some(ty.name.to_string()),
                    attributes: Some(attributes),
                    ..ToxicInput::default()
                };
                let e = Toxic::create(input, mode_of(ty)).unwrap_err();
                assert_eq!(e.status, http::StatusCode::BAD_REQUEST, "{}.{key}", ty.name);
                assert!(
                    e.message
                        .starts_with(&format!("bad request body: attributes.{key}: ")),
                    "{}.{key}: {}",
                    ty.name,
                    e.message
                );
                // An update cannot get there either.
                let t = create_default(ty, mode_of(ty)).unwrap();
                let mut change = Map::new();
                change.insert(key.to_string(), serde_json::from_str(too_big).unwrap());
                let update = ToxicUpdate {
                    attributes: Some(change),
                    toxicity: None,
                };
                assert!(t.updated(update, mode_of(ty)).is_err(), "{}.{key}", ty.name);
            }
        }
    }
    // The top of the range is a valid toxic (the slicer's variation stays
    // below its average; an HTTP status is a status).
    for json in [
        r#"{"type":"latency","attributes":{"latency":9223372036854775807,"jitter":9223372036854775807}}"#,
        r#"{"type":"bandwidth","attributes":{"rate":9223372036854775807}}"#,
        r#"{"type":"slow_close","attributes":{"delay":9223372036854775807}}"#,
        r#"{"type":"timeout","attributes":{"timeout":9223372036854775807}}"#,
        r#"{"type":"reset_peer","attributes":{"timeout":9223372036854775807}}"#,
        r#"{"type":"limit_data","attributes":{"bytes":9223372036854775807}}"#,
        r#"{"type":"slicer","attributes":{"average_size":9223372036854775807,"size_variation":9223372036854775806,"delay":9223372036854775807}}"#,
    ] {
        let t = Toxic::create(input(json), ProxyMode::Tcp).unwrap();
        assert!(t.faults(ProxyMode::Tcp).is_ok(), "{json}");
    }
}

#[test]
fn stream_is_read_case_insensitively_as_toxiproxy_parses_it() {
    let t = Toxic::create(
        input(r#"{"type":"noop","stream":"UpStream"}"#),
        ProxyMode::Tcp,
    )
    .unwrap();
    let f = Toxic::create(
        input(r#"{"type":"latency","stream":"UPSTREAM","attributes":{"latency":5}}"#),
        ProxyMode::Tcp,
    )
    .unwrap()
    .faults(ProxyMode::Tcp)
    .unwrap();
    // Toxiproxy keeps the stream as sent, and names the toxic with it.
    assert_eq!(
        (t.stream.as_str(), t.name.as_str()),
        ("UpStream", "noop_UpStream")
    );
    let FaultKind::Latency(l) = &f[0].kind else {
        panic!("a latency fault: {f:?}");
    };
    assert_eq!(l.direction, Direction::Upstream);
    let e = Toxic::create(
        input(r#"{"type":"noop","stream":"sideways"}"#),
        ProxyMode::Tcp,
    )
    .unwrap_err();
    assert_eq!(e, ApiError::invalid_stream());
}

#[test]
fn a_fault_toxic_carries_any_http_fault_an_experiment_writes_with_its_match_and_probability() {
    let spec = r#"{"name":"t","type":"http_fault","toxicity":0.5,"attributes":{"spec":"{\"match\": \"/inventory/*\", \"probability\": \"50%\", \"status\": {\"code\": 500}}"}}"#;
    let t = Toxic::create(input(spec), ProxyMode::Http).unwrap();
    let faults = t.faults(ProxyMode::Http).unwrap();
    assert_eq!(faults.len(), 1);
    let f = &faults[0];
    assert_eq!(f.name, "t");
    assert!(matches!(&f.kind, FaultKind::Status(s) if s.code.0 == 500));
    assert!((f.probability.percent() - 25.0).abs() < 1e-9, "50% of 50%");
    let headers = http::HeaderMap::new();
    assert!(
        f.matcher
            .matches(&http::Method::GET, "/inventory/1", &headers)
    );
    assert!(!f.matcher.matches(&http::Method::GET, "/other", &headers));
}

#[test]
fn a_fault_toxic_refuses_timing_a_tcp_only_kind_a_tcp_proxy_and_a_broken_spec_by_key() {
    let make = |spec: &str, mode| {
        let body = serde_json::json!({"type": "http_fault", "attributes": {"spec": spec}});
        Toxic::create(serde_json::from_value(body).unwrap(), mode).unwrap_err()
    };
    let e = make(r#"{"status": {"code": 500}, "at": "2s"}"#, ProxyMode::Http);
    assert!(e.message.contains("at, for, pattern"), "{e}");
    let e = make(r#"{"slicer": {"average_size": 10}}"#, ProxyMode::Http);
    assert!(e.message.contains("`slicer` works in tcp mode only"), "{e}");
    let e = make(r#"{"status": {"code": 500}}"#, ProxyMode::Tcp);
    assert!(e.message.contains("\"mode\": \"http\""), "{e}");
    let e = make(r#"{"status": {"code": 99}}"#, ProxyMode::Http);
    assert!(
        e.message.starts_with("attributes.spec.status.code: "),
        "{e}"
    );
    let e = make("", ProxyMode::Http);
    assert!(e.message.contains("empty"), "{e}");
}
