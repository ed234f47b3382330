//! The NGINX mapping: servers, passive settings, locations, health checks,
//! and every refused directive or parameter with its message.

use serde_yaml_ng::Value;

use crate::defense::import::{Format, test_support};

fn imported(conf: &str) -> Value {
    test_support::imported(Format::Nginx, "nginx.conf", conf)
}

/// `http { UPSTREAM server { LOCATION } }` around the given pieces.
fn conf(upstream: &str, location: &str) -> String {
    format!(
        "http {{\n upstream up {{\n{upstream}\n }}\n server {{\n  location /x/ {{\n   proxy_pass http://up;\n{location}\n  }}\n }}\n}}\n"
    )
}

#[test]
fn servers_take_nginx_defaults_and_down_is_left_out() {
    let doc = imported(&conf(
        "  server a:1;\n  server b weight=2 backup;\n  server c:3 down;",
        "",
    ));
    let pool = &doc["pools"]["up"];
    let servers = pool["servers"].as_sequence().unwrap();
    assert_eq!(servers.len(), 2);
    assert_eq!(servers[1]["address"], Value::from("b:80"));
    assert_eq!(servers[1]["weight"], Value::from(2));
    assert_eq!(servers[1]["backup"], Value::from(true));
    assert_eq!(pool["max_fails"], Value::from(1));
    assert_eq!(pool["fail_timeout"], Value::from("10s"));
    assert_eq!(pool["slow_start"], Value::from("0s"));
    assert_eq!(pool["balance"], Value::from("round_robin"));
}

#[test]
fn a_location_gives_its_route_a_glob_a_timeout_and_next_upstream_defaults() {
    let doc = imported(&conf("  server a:1;", ""));
    let route = &doc["routes"]["up"];
    assert_eq!(route["match"], Value::from("/x/*"));
    assert_eq!(route["pool"], Value::from("up"));
    assert_eq!(route["timeout"], Value::from("60s"));
    let next = &route["next_upstream"];
    assert_eq!(
        next["on"],
        serde_yaml_ng::from_str::<Value>("[error, timeout]").unwrap()
    );
    assert_eq!(next["tries"], Value::from(0));
    assert_eq!(next["non_idempotent"], Value::from(false));
}

#[test]
fn proxy_directives_are_inherited_from_http_and_server_and_a_location_overrides_them() {
    let text = "http {\n proxy_read_timeout 3s;\n proxy_next_upstream error http_503;\n upstream up { server a:1; }\n server {\n  proxy_read_timeout 4s;\n  location /x/ { proxy_pass http://up; }\n  location = /y { proxy_pass http://other; }\n }\n upstream other { server b:1; }\n}\n";
    let doc = imported(text);
    assert_eq!(doc["routes"]["up"]["timeout"], Value::from("4s"));
    assert_eq!(
        doc["routes"]["up"]["next_upstream"]["on"],
        serde_yaml_ng::from_str::<Value>("[error, http_503]").unwrap()
    );
    assert_eq!(doc["routes"]["other"]["match"], Value::from("/y"));
    // An exact location comes before the prefixes, as NGINX prefers it.
    let names: Vec<&str> = doc["routes"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(names, ["other", "up"]);
}

#[test]
fn a_health_check_with_its_match_block_becomes_the_pools_check() {
    let text = "http {\n match ok { status 200 204; header X-Up = yes; body ~* \"fine\"; }\n upstream up { server a:1; }\n server { location /x/ { proxy_pass http://up; proxy_read_timeout 500ms; health_check interval=2s fails=3 passes=2 uri=/ping match=ok mandatory; } }\n}\n";
    let check = imported(text)["pools"]["up"]["health_check"].clone();
    assert_eq!(check["uri"], Value::from("/ping"));
    assert_eq!(check["interval"], Value::from("2s"));
    assert_eq!(check["timeout"], Value::from("500ms"));
    assert_eq!(check["fails"], Value::from(3));
    assert_eq!(check["passes"], Value::from(2));
    assert_eq!(
        check["match"]["status"],
        serde_yaml_ng::from_str::<Value>("[200, 204]").unwrap()
    );
    assert_eq!(check["match"]["header"]["X-Up"], Value::from("^yes$"));
    assert_eq!(check["match"]["body"], Value::from("(?i)fine"));
}

#[test]
fn servers_keep_their_own_max_fails_and_fail_timeout_as_nginx_does() {
    // NGINX's health-check guide: one server with the defaults, one with
    // max_fails=3 fail_timeout=30s.
    let doc = imported(&conf(
        "  server a:1;\n  server b:1 max_fails=3 fail_timeout=30s;\n  server c:1 max_fails=1;",
        "",
    ));
    let pool = &doc["pools"]["up"];
    assert_eq!(pool["max_fails"], Value::from(1));
    assert_eq!(pool["fail_timeout"], Value::from("10s"));
    let servers = pool["servers"].as_sequence().unwrap();
    assert_eq!(servers[0].get("max_fails"), None);
    assert_eq!(servers[1]["max_fails"], Value::from(3));
    assert_eq!(servers[1]["fail_timeout"], Value::from("30s"));
    // Written, but the pool's value: nothing to keep apart.
    assert_eq!(servers[2].get("max_fails"), None);
    // Agreed by every server: the pool's own value, as before.
    let agreed = imported(&conf(
        "  server a:1 max_fails=2;\n  server b:1 max_fails=2;",
        "",
    ));
    assert_eq!(agreed["pools"]["up"]["max_fails"], Value::from(2));
    let servers = agreed["pools"]["up"]["servers"].as_sequence().unwrap();
    assert!(servers.iter().all(|s| s.get("max_fails").is_none()));
}

#[test]
fn a_negated_body_condition_becomes_body_not() {
    let text = "http {\n match server_ok { status 200-399; body !~ \"maintenance mode\"; }\n upstream up { server a:1; }\n server { location /x/ { proxy_pass http://up; health_check match=server_ok; } }\n}\n";
    let check = imported(text)["pools"]["up"]["health_check"].clone();
    assert_eq!(check["match"]["body_not"], Value::from("maintenance mode"));
    assert_eq!(check["match"].get("body"), None);
}

#[test]
fn a_health_check_without_mandatory_starts_servers_in_rotation() {
    let plain = imported(&conf("  server a:1;", "   health_check;"));
    assert_eq!(
        plain["pools"]["up"]["health_check"]["mandatory"],
        Value::from(false)
    );
    let mandatory = imported(&conf("  server a:1;", "   health_check mandatory;"));
    assert_eq!(
        mandatory["pools"]["up"]["health_check"]["mandatory"],
        Value::from(true)
    );
}

#[test]
fn every_refused_directive_says_where_and_what_is_not_modelled() {
    let cases: Vec<(String, &str)> = vec![
        (conf("  server a:1 slow_start=30s;\n  server b:1;", ""), "slow_start=30s of this server differs from another server's: not modelled"),
        (conf("  server a:1 max_conns=10;", ""), "max_conns limits a server's connections: not modelled"),
        (conf("  server a:1 resolve;", ""), "`resolve` (NGINX Plus) is not modelled"),
        (conf("  server a:1 frobnicate=2;", ""), "unknown server parameter `frobnicate`"),
        (conf("  server unix:/tmp/s.sock;", ""), "a unix socket server is not modelled"),
        (conf("  server a:1 weight=0;", ""), "invalid weight `0`"),
        (conf("  server a:1 fail_timeout=soon;", ""), "invalid time `soon`"),
        (conf("  server a:1 down;", ""), "no server in rotation"),
        (conf("  ip_hash;\n  server a:1;", ""), "`ip_hash` balancing is not modelled"),
        (conf("  hash $request_uri;\n  server a:1;", ""), "`hash` balancing is not modelled"),
        (conf("  queue 10;\n  server a:1;", ""), "`queue` holds requests while every server is busy: not modelled"),
        (conf("  sticky cookie srv;\n  server a:1;", ""), "`sticky` balancing is not modelled"),
        (conf("  server a:1;", "   proxy_next_upstream error sometimes;"), "unknown condition `sometimes`"),
        (conf("  server a:1;", "   proxy_next_upstream_timeout 10s;"), "a time limit on passing a request on is not modelled"),
        (conf("  server a:1;", "   proxy_next_upstream_tries many;"), "expected a whole number"),
        (conf("  server a:1;", "   proxy_read_timeout 0;"), "a zero timeout fails every call: not modelled"),
        (conf("  server a:1;", "   proxy_cache_use_stale error timeout;"), "serving a stale cached answer depends on proxy_cache and proxy_cache_valid: not modelled"),
        (conf("  server a:1;", "   health_check mandatory jitter=1s;"), "a random jitter of the checks is not modelled"),
        (conf("  server a:1;", "   health_check mandatory port=8081;"), "checking another port than the server's is not modelled"),
        (conf("  server a:1;", "   health_check mandatory type=grpc;"), "`type=grpc` checks are not modelled"),
        (conf("  server a:1;", "   health_check mandatory match=nope;"), "no match block `nope` in the file"),
        (conf("  server a:1;", "   health_check mandatory fails=0;"), "invalid fails `0`"),
        ("http { match m { status ! 500; } upstream up { server a:1; } server { location /x/ { proxy_pass http://up; health_check mandatory match=m; } } }".to_string(), "a negated status (`status ! ...`) is not modelled"),
        ("http { match m { header ! X-A; } upstream up { server a:1; } server { location /x/ { proxy_pass http://up; health_check mandatory match=m; } } }".to_string(), "this header condition (a negation, or `!=`, `!~`) is not modelled"),
        ("http { match m { body down; } upstream up { server a:1; } server { location /x/ { proxy_pass http://up; health_check mandatory match=m; } } }".to_string(), "expected `body ~ REGEX`"),
        ("http { upstream up { server a:1; } server { location ~ ^/x { proxy_pass http://up; } } }".to_string(), "a regex location (`~ ^/x`) is not modelled"),
        ("http { upstream up { server a:1; } server { location /x/ { proxy_pass http://up; } location /y/ { proxy_pass http://up; } } }".to_string(), "a second location proxying to upstream `up`"),
        ("http { upstream up { server a:1; least_time header; } }".to_string(), "`least_time` in an upstream block is not modelled"),
        ("http { upstream up { server a:1 }".to_string(), "directive `server` has no ending `;`"),
        ("events { }".to_string(), "no upstream block"),
    ];
    test_support::assert_refused(Format::Nginx, "nginx.conf", &cases);
}
