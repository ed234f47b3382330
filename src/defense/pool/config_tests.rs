//! Reading pools from the `defense:` YAML: defaults, every key, and each
//! bad value refused at its line and column with its key.

use super::*;
use crate::defense::DefenseConfig;

fn parse(yaml: &str) -> Result<DefenseConfig, String> {
    crate::schema::from_yaml_str::<DefenseConfig>("defense.yaml", yaml).map_err(|e| e.to_string())
}

/// The error for `pools: { p: <pool> }`, where `pool` is indented under
/// `p:`.
fn pool_error(pool: &str) -> String {
    let indented: String = pool.lines().map(|l| format!("    {l}\n")).collect();
    parse(&format!("pools:\n  p:\n{indented}")).unwrap_err()
}

#[test]
fn a_bare_server_list_gets_nginx_defaults() {
    let config = parse("pools:\n  p:\n    servers: [{ address: 127.0.0.1:1 }]\n").unwrap();
    let pool = &config.pools["p"];
    assert_eq!(pool.balance, Balance::RoundRobin);
    assert_eq!(pool.max_fails, 1);
    assert_eq!(pool.fail_timeout, Duration::from_secs(10));
    assert_eq!(pool.slow_start, Duration::ZERO);
    assert!(pool.health_check.is_none());
    assert_eq!(
        pool.servers,
        [ServerConfig {
            name: "127.0.0.1:1".into(),
            target: ServerTarget::Address("127.0.0.1:1".into()),
            weight: 1,
            backup: false,
            max_fails: None,
            fail_timeout: None,
        }]
    );
}

#[test]
fn every_key_is_read() {
    let config = parse(
        "routes:
  inventory: { match: /inventory/*, pool: p }
pools:
  p:
    servers:
      - { instance: a, weight: 3 }
      - { address: 10.0.0.1:80, name: spare, backup: true }
    balance: least_conn
    max_fails: 3
    fail_timeout: 30s
    slow_start: 1m
    health_check:
      uri: /ready
      interval: 2s
      timeout: 500ms
      fails: 2
      passes: 4
      match: { status: [200, '204-206'], header: { x-up: yes }, body: ok }
",
    )
    .unwrap();
    assert_eq!(config.routes["inventory"].pool.as_deref(), Some("p"));
    let pool = &config.pools["p"];
    assert_eq!(pool.balance, Balance::LeastConn);
    assert_eq!(pool.max_fails, 3);
    assert_eq!(pool.fail_timeout, Duration::from_secs(30));
    assert_eq!(pool.slow_start, Duration::from_secs(60));
    assert_eq!(
        pool.servers[0],
        ServerConfig {
            name: "a".into(),
            target: ServerTarget::Instance("a".into()),
            weight: 3,
            backup: false,
            max_fails: None,
            fail_timeout: None,
        }
    );
    assert_eq!(pool.servers[1].name, "spare");
    assert!(pool.servers[1].backup);
    let check = pool.health_check.as_ref().unwrap();
    assert_eq!(check.uri, "/ready");
    assert_eq!(check.interval, Duration::from_secs(2));
    assert_eq!(check.timeout, Duration::from_millis(500));
    assert_eq!((check.fails, check.passes), (2, 4));
    assert_eq!(check.matcher.status, [(200, 200), (204, 206)]);
    assert_eq!(check.matcher.headers[0].0, "x-up");
    assert_eq!(check.matcher.body.as_ref().unwrap().as_str(), "ok");
}

#[test]
fn a_check_timeout_longer_than_the_interval_is_cut_to_the_interval() {
    let config = parse(
        "pools:\n  p:\n    servers: [{ address: a:1 }]\n    health_check: { interval: 2s, timeout: 5s }\n",
    )
    .unwrap();
    let check = config.pools["p"].health_check.as_ref().unwrap();
    assert_eq!(check.timeout, Duration::from_secs(2));
}

#[test]
fn a_route_naming_an_unknown_pool_is_refused_at_its_pool_key() {
    let err = parse(
        "routes:
  inventory:
    pool: invntory
pools:
  inventory: { servers: [{ address: a:1 }] }
",
    )
    .unwrap_err();
    assert_eq!(
        err,
        "defense.yaml:3:11: routes.inventory.pool: unknown pool `invntory`: expected one of `inventory`"
    );
}

#[test]
fn a_route_naming_a_pool_when_there_are_none_says_so() {
    let err = parse("routes:\n  r:\n    pool: p\n").unwrap_err();
    assert_eq!(
        err,
        "defense.yaml:3:11: routes.r.pool: unknown pool `p`: no pools are defined (add one under pools:)"
    );
}

#[test]
fn a_pool_without_servers_is_refused() {
    assert_eq!(
        pool_error("servers: []"),
        "defense.yaml:3:14: pools.p.servers: a pool needs at least one server"
    );
}

#[test]
fn a_pool_of_backups_only_is_refused() {
    assert_eq!(
        pool_error("servers: [{ address: a:1, backup: true }]"),
        "defense.yaml:3:14: pools.p.servers: every server is a backup: expected at least one primary (backup: false)"
    );
}

#[test]
fn two_servers_with_one_name_are_refused_at_the_second() {
    assert_eq!(
        pool_error("servers:\n  - { address: a:1 }\n  - { address: b:1, name: a:1 }"),
        "defense.yaml:5:9: pools.p.servers[1]: the server name `a:1` is taken by servers[0]: expected unique names (set name:)"
    );
}

#[test]
fn a_weight_of_zero_is_refused() {
    assert_eq!(
        pool_error("servers: [{ address: a:1, weight: 0 }]"),
        "defense.yaml:3:39: pools.p.servers[0].weight: must be at least 1"
    );
}

#[test]
fn a_server_needs_exactly_one_of_address_and_instance() {
    assert_eq!(
        pool_error("servers:\n  - { address: a:1, instance: a }"),
        "defense.yaml:4:9: pools.p.servers[0]: give either address or instance, not both"
    );
    assert_eq!(
        pool_error("servers:\n  - { weight: 2 }"),
        "defense.yaml:4:9: pools.p.servers[0]: give address (host:port) or instance (a target instance)"
    );
}

#[test]
fn an_instance_server_cannot_be_renamed() {
    assert_eq!(
        pool_error("servers:\n  - { instance: a, name: b }"),
        "defense.yaml:4:30: pools.p.servers[0].name: an instance server is named after its instance (`a`): leave name out"
    );
}

#[test]
fn a_bad_body_regex_is_refused_at_the_body_key() {
    assert_eq!(
        pool_error("servers: [{ address: a:1 }]\nhealth_check:\n  match: { body: '([' }"),
        "defense.yaml:5:22: pools.p.health_check.match.body: invalid regex `([`: unclosed character class"
    );
}

#[test]
fn a_bad_header_regex_is_refused_at_its_header() {
    let err = pool_error(
        "servers: [{ address: a:1 }]\nhealth_check:\n  match: { header: { x-up: '(' } }",
    );
    assert_eq!(
        err,
        "defense.yaml:5:32: pools.p.health_check.match.header.x-up: invalid regex `(`: unclosed group"
    );
}

#[test]
fn bad_status_ranges_are_refused_at_the_status_key() {
    let err = |status: &str| {
        pool_error(&format!(
            "servers: [{{ address: a:1 }}]\nhealth_check:\n  match:\n    status: {status}"
        ))
    };
    assert_eq!(
        err("'400-200'"),
        "defense.yaml:6:17: pools.p.health_check.match.status: invalid range `400-200`: the first code must not be above the second"
    );
    assert_eq!(
        err("'200-700'"),
        "defense.yaml:6:17: pools.p.health_check.match.status: invalid status `200-700`: expected a code from 100 to 599 or a range such as `200-399`"
    );
    assert_eq!(
        err("[200, two]"),
        "defense.yaml:6:23: pools.p.health_check.match.status[1]: invalid status `two`: expected a code from 100 to 599 or a range such as `200-399`"
    );
    assert_eq!(
        err("[]"),
        "defense.yaml:6:17: pools.p.health_check.match.status: expected at least one code or range"
    );
}

#[test]
fn zero_counts_and_intervals_are_refused() {
    let check = |body: &str| {
        pool_error(&format!(
            "servers: [{{ address: a:1 }}]\nhealth_check: {{ {body} }}"
        ))
    };
    assert!(check("fails: 0").contains("health_check.fails: must be at least 1"));
    assert!(check("passes: 0").contains("health_check.passes: must be at least 1"));
    assert!(check("interval: 0").contains("health_check.interval: must be longer than 0s"));
    assert!(check("uri: health").contains("health_check.uri: invalid path `health`"));
    assert!(
        pool_error("servers: [{ address: a:1 }]\nfail_timeout: 0")
            .contains("pools.p.fail_timeout: must be longer than 0s")
    );
}

#[test]
fn an_unknown_balance_is_refused_with_the_known_ones() {
    let err = pool_error("servers: [{ address: a:1 }]\nbalance: random");
    assert!(
        err.starts_with("defense.yaml:4:14: pools.p.balance: "),
        "{err}"
    );
    assert!(
        err.contains("round_robin") && err.contains("least_conn"),
        "{err}"
    );
}
