//! Game days across hosts, on loopback: two `firedrill server` agents in
//! front of the dependencies of two services (the shop calls the catalog
//! through agent 1, the catalog calls its database through agent 2), a
//! drill that applies its faults through the agents' API and judges both
//! breakers from the agents' request records
//! (experiments/gameday/across-hosts.yaml), and what must fail: a breaker
//! that leaks, a service with none, a drill killed with -9 (the agent's
//! lease removes the faults), an agent that cannot be reached or refuses
//! the drill.

#[path = "blackbox_support/mod.rs"]
mod blackbox_support;
mod cert_support;
mod port_support;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use blackbox_support::{Drill, Service, free_port, services};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A firedrill process of the test (an agent, the database), killed on
/// drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (at most 5 s) until something listens on `port`.
#[allow(clippy::disallowed_methods)]
fn wait_listening(port: u16) {
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("nothing listened on {port} within 5s");
}

/// `firedrill ARGS` in the background, listening on `port`, its log
/// (stderr) into `log`.
fn firedrill_process(args: &[&str], port: u16, log: Stdio) -> Process {
    let child = Command::new(env!("CARGO_BIN_EXE_firedrill"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    let process = Process(child);
    wait_listening(port);
    process
}

/// `firedrill server` on a free port (with `token`, if any), its log into
/// `log`.
fn agent(token: Option<&str>, log: Stdio) -> (Process, u16) {
    agent_with(token, &[], log)
}

/// [`agent`] with `extra` flags.
fn agent_with(token: Option<&str>, extra: &[&str], log: Stdio) -> (Process, u16) {
    let port = free_port();
    let port_arg = port.to_string();
    let mut args = vec!["server", "--port", &port_arg];
    if let Some(token) = token {
        args.extend(["--api-token", token]);
    }
    args.extend(extra);
    (firedrill_process(&args, port, log), port)
}

/// The hand-written breaker service with `env` (tests/services).
fn handwritten(env: Vec<(&str, String)>) -> Service {
    let service = root().join("tests/services/handwritten/service.py");
    Service::program("python3", &[service.to_str().unwrap()], &env)
}

/// What every game day here stands on: a database (`firedrill target`)
/// and two agents, each a real process on a free port, the ports of the
/// proxies the drill makes on the agents, and the drill's folder.
struct Hosts {
    _database: Process,
    database: u16,
    agents: [(Process, u16); 2],
    proxies: [u16; 2],
    dir: tempfile::TempDir,
}

impl Hosts {
    /// The database and the agents, the second with `agent_flags`.
    fn start(agent_flags: &[&str]) -> Hosts {
        Hosts::start_in(tempfile::tempdir().unwrap(), &[], agent_flags)
    }

    /// [`Hosts::start`] in `dir`, both agents with `both`, the second also
    /// with `second`.
    fn start_in(dir: tempfile::TempDir, both: &[&str], second: &[&str]) -> Hosts {
        let database = free_port();
        let db_listen = format!("127.0.0.1:{database}");
        let database_process =
            firedrill_process(&["target", "--listen", &db_listen], database, Stdio::null());
        let log = |i: usize| Stdio::from(std::fs::File::create(agent_log(dir.path(), i)).unwrap());
        let second = [both, second].concat();
        let agents = [
            agent_with(None, both, log(0)),
            agent_with(None, &second, log(1)),
        ];
        Hosts {
            _database: database_process,
            database,
            agents,
            proxies: [free_port(), free_port()],
            dir,
        }
    }

    /// The experiment's port variables: the database, the agents, and the
    /// proxies `names` (`CATALOG` for `CATALOG_PROXY_PORT`).
    fn variables(&self, names: [&str; 2]) -> Vec<(String, String)> {
        let [first, second] = names;
        vec![
            ("DATABASE_PORT".into(), self.database.to_string()),
            (format!("{first}_PROXY_PORT"), self.proxies[0].to_string()),
            (format!("{second}_PROXY_PORT"), self.proxies[1].to_string()),
            ("AGENT_1_PORT".into(), self.agents[0].1.to_string()),
            ("AGENT_2_PORT".into(), self.agents[1].1.to_string()),
        ]
    }
}

/// Everything the drill reaches, each part a real process on a free port.
struct Topology {
    hosts: Hosts,
    catalog: Service,
    shop: Service,
    /// The services' own breaker events: the shop's, the catalog's.
    events: [PathBuf; 2],
    /// The catalog's leaked calls (`LEAK_EVENTS`).
    leaks: PathBuf,
}

impl Topology {
    /// Starts the database, the two agents and the two services, the
    /// catalog with `switches` (LEAK_EVERY, NO_BREAKER).
    fn start(switches: &[(&str, &str)]) -> Topology {
        Topology::start_with(switches, &[])
    }

    /// [`Topology::start`], the second agent (the inventory's) started
    /// with `agent_flags`.
    fn start_with(switches: &[(&str, &str)], agent_flags: &[&str]) -> Topology {
        Topology::start_on(Hosts::start(agent_flags), switches)
    }

    /// [`Topology::start`] on `hosts`.
    fn start_on(hosts: Hosts, switches: &[(&str, &str)]) -> Topology {
        let (dir, proxies) = (&hosts.dir, hosts.proxies);
        let events = [
            dir.path().join("shop.jsonl"),
            dir.path().join("catalog.jsonl"),
        ];
        let leaks = dir.path().join("leaks.jsonl");
        let mut catalog_env = vec![
            ("ROUTE", "inventory".to_string()),
            (
                "DEPENDENCY_URL",
                format!("http://127.0.0.1:{}/db", proxies[1]),
            ),
            ("RESET_TIMEOUT_S", "2".to_string()),
            ("EVENTS_FILE", events[1].display().to_string()),
            ("LEAK_EVENTS", leaks.display().to_string()),
        ];
        catalog_env.extend(switches.iter().map(|(k, v)| (*k, v.to_string())));
        let catalog = handwritten(catalog_env);
        let shop = handwritten(vec![
            ("DEPENDENCY_URL", format!("http://127.0.0.1:{}", proxies[0])),
            ("RESET_TIMEOUT_S", "2".to_string()),
            ("EVENTS_FILE", events[0].display().to_string()),
        ]);
        Topology {
            hosts,
            catalog,
            shop,
            events,
            leaks,
        }
    }

    /// The experiment's port variables.
    fn variables(&self) -> Vec<(String, String)> {
        let mut variables = self.hosts.variables(["CATALOG", "INVENTORY"]);
        variables.push(("SHOP_PORT".into(), self.shop.port.to_string()));
        variables.push(("CATALOG_PORT".into(), self.catalog.port.to_string()));
        variables
    }

    /// experiments/gameday/across-hosts.yaml with each `(from, to)` of
    /// `edits` replaced, written beside the reports.
    fn experiment(&self, edits: &[(&str, &str)]) -> PathBuf {
        let mut text =
            std::fs::read_to_string(root().join("experiments/gameday/across-hosts.yaml")).unwrap();
        for (from, to) in edits {
            assert!(
                text.contains(from),
                "across-hosts.yaml no longer holds {from:?}"
            );
            text = text.replace(from, to);
        }
        let file = self.hosts.dir.path().join("drill.yaml");
        std::fs::write(&file, text).unwrap();
        file
    }

    /// `firedrill run FILE --quiet --report-dir ...` with the ports set.
    fn command(&self, file: &Path) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_firedrill"));
        command
            .envs(self.variables())
            .arg("run")
            .arg(file)
            .arg("--quiet")
            .arg("--report-dir")
            .arg(self.reports());
        command
    }

    /// Runs the drill with `edits` to its end.
    fn run(&self, edits: &[(&str, &str)]) -> Drill {
        Drill::finish(self.command(&self.experiment(edits)), &self.reports())
    }

    fn reports(&self) -> PathBuf {
        self.hosts.dir.path().join("report")
    }

    fn report(&self) -> serde_json::Value {
        blackbox_support::report_in(&self.reports())
    }

    /// What agent `i` logged so far.
    fn agent_log(&self, i: usize) -> String {
        std::fs::read_to_string(agent_log(self.hosts.dir.path(), i)).unwrap_or_default()
    }

    /// `GET PATH` on agent `i`'s API: the status and the JSON body.
    fn api(&self, i: usize, path: &str) -> (u16, serde_json::Value) {
        api_get(self.hosts.agents[i].1, path, None)
    }
}

/// Where agent `i` of a topology in `dir` logs.
fn agent_log(dir: &Path, i: usize) -> PathBuf {
    dir.join(format!("agent-{i}.log"))
}

/// `GET PATH` on the API at `port`.
fn api_get(port: u16, path: &str, token: Option<&str>) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let auth = token
        .map(|t| format!("authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth}connection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer[9..12].parse().unwrap();
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

fn sequence(t: &[(f64, String, String)]) -> Vec<String> {
    t.iter().map(|(_, f, to)| format!("{f} -> {to}")).collect()
}

#[test]
fn two_services_breakers_are_judged_from_two_agents_records_as_their_own_events_say() {
    let topology = Topology::start(&[]);
    let ran = topology.run(&[]);
    assert_eq!(
        ran.exit,
        Some(0),
        "{}\n{:#}",
        ran.output,
        ran.report["verdicts"]
    );
    // Each inferred breaker follows its service's own events: the same
    // sequence, each within two inter-arrival intervals (20 req/s) plus
    // 100 ms.
    let started = ran.report["started_at_unix_ms"].as_f64().unwrap();
    for (breaker, events) in [
        ("catalog", &topology.events[0]),
        ("inventory", &topology.events[1]),
    ] {
        let inferred = blackbox_support::transitions(&ran.report, breaker);
        let own = blackbox_support::events(events);
        assert_eq!(sequence(&inferred), sequence(&own), "{breaker}");
        assert_eq!(own.len(), 3, "{breaker}: {own:?}");
        for ((at, ..), (event_ms, ..)) in inferred.iter().zip(&own) {
            let off = at - (event_ms - started);
            assert!(
                off.abs() <= 200.0,
                "{breaker}: inferred {at:.0} ms, off by {off:.0} ms"
            );
        }
    }
    // The report: every window applied by its agent near its planned time,
    // each agent's clock measured, the evidence its records.
    let agents = ran.report["agents"].as_array().expect("an agents section");
    assert_eq!(agents.len(), 2);
    for agent in agents {
        assert_eq!(agent["kind"], "firedrill");
        assert_eq!(agent["proxy_was"], "created");
        assert!(agent["clock"]["samples"].as_u64().unwrap() >= 10, "{agent}");
        let offset = agent["clock"]["offset_ms"].as_f64().unwrap();
        assert!(offset.abs() < 50.0, "one machine's clock: {agent}");
        assert!(
            agent["evidence"]["records"].as_u64().unwrap() > 50,
            "{agent}"
        );
        assert_eq!(agent["evidence"]["dropped"], 0);
        let window = &agent["windows"][0];
        let (planned, applied) = (&window["planned_ms"], &window["applied_ms"]);
        for k in 0..2 {
            let late = applied[k].as_f64().unwrap() - planned[k].as_f64().unwrap();
            assert!((0.0..1000.0).contains(&late), "{agent}");
        }
    }
    // Expectations judge the windows as applied.
    let faults = ran.report["faults"].as_array().unwrap();
    for (fault, agent) in faults.iter().zip([&agents[1], &agents[0]]) {
        assert_eq!(
            fault["windows_ms"][0], agent["windows"][0]["applied_ms"],
            "{fault}"
        );
        assert!(fault["injected"].as_u64().unwrap() >= 5, "{fault}");
    }
    // Every fault and every proxy the drill made is gone from the agents.
    for i in 0..2 {
        assert_eq!(topology.api(i, "/proxies"), (200, serde_json::json!({})));
    }
}

#[test]
fn a_catalog_service_without_its_breaker_fails_the_drill_judged_from_the_agent_s_records() {
    let topology = Topology::start(&[("NO_BREAKER", "1")]);
    let ran = topology.run(&[]);
    assert_eq!(ran.exit, Some(1), "{}", ran.output);
    for expectation in [
        "breaker inventory goes closed -> open -> half_open -> closed",
        "breaker inventory opens within 1500ms of inventory-500.start",
    ] {
        let verdict = ran.verdict(expectation);
        assert_eq!(verdict["passed"], false, "{verdict}");
    }
    assert_eq!(
        ran.verdict("breaker catalog goes closed -> open -> half_open -> closed")["passed"],
        true
    );
}

/// The toxics on agent `i`'s `proxy`.
/// The across-hosts drill under each seed of `SEEDS`, each on a topology
/// of its own with the catalog's `switches`.
fn across_hosts_under_seeds(switches: &[(&str, &str)]) -> Vec<(u64, Topology, Drill)> {
    blackbox_support::under_seeds(|seed| {
        let topology = Topology::start(switches);
        let seed_line = format!("seed: {seed}");
        let ran = topology.run(&[("seed: 23", &seed_line)]);
        (topology, ran)
    })
    .into_iter()
    .map(|(seed, (topology, ran))| (seed, topology, ran))
    .collect()
}

/// Seeds whose trace ids are made only of decimal digits (7) and seeds
/// whose are not (10, 11) get the same verdict: every call paired with its
/// request by the id the services passed on, every journal a path of the
/// state machine.
#[test]
fn a_correct_game_day_across_hosts_passes_under_every_seed_with_its_calls_paired_by_id() {
    for (seed, _topology, ran) in across_hosts_under_seeds(&[]) {
        blackbox_support::passed_paired_by_id(seed, &ran, &["catalog", "inventory"]);
    }
}

#[test]
fn a_leaking_catalog_breaker_fails_under_every_seed_naming_the_leaked_calls() {
    let proof = "calls to /db/inventory/* while inventory is open == 0";
    for (seed, topology, ran) in across_hosts_under_seeds(&[("LEAK_EVERY", "5")]) {
        let leaks = services::leaks_in(&topology.leaks);
        services::fails_naming_a_leak(&format!("seed {seed}"), &ran, &leaks, proof);
        // The shop's breaker, correct, still holds.
        let shop = ran.verdict("calls to /inventory/* while catalog is open == 0");
        assert_eq!(shop["passed"], true, "seed {seed}: {shop}");
    }
}

/// One service with two dependencies, each behind an agent
/// (experiments/gameday/two-dependencies.yaml): the databases, the agents
/// and the hand-written service calling both, with `switches`.
struct TwoDependencies {
    hosts: Hosts,
    shop: Service,
    /// The inventory's and the pricing's leaked calls (`LEAK_EVENTS`).
    leaks: PathBuf,
}

impl TwoDependencies {
    fn start(switches: &[(&str, &str)]) -> TwoDependencies {
        let hosts = Hosts::start(&[]);
        let proxies = hosts.proxies;
        let leaks = hosts.dir.path().join("leaks.jsonl");
        let mut env = vec![
            (
                "DEPENDENCY_URL",
                format!("http://127.0.0.1:{}/inventory-db", proxies[0]),
            ),
            (
                "SECOND_DEPENDENCY_URL",
                format!("http://127.0.0.1:{}/pricing-db", proxies[1]),
            ),
            ("RESET_TIMEOUT_S", "2".to_string()),
            ("LEAK_EVENTS", leaks.display().to_string()),
        ];
        env.extend(switches.iter().map(|(k, v)| (*k, v.to_string())));
        TwoDependencies {
            hosts,
            shop: handwritten(env),
            leaks,
        }
    }

    /// The drill under `seed`, to its end.
    fn run(&self, seed: u64) -> Drill {
        let text =
            std::fs::read_to_string(root().join("experiments/gameday/two-dependencies.yaml"))
                .unwrap()
                .replace("seed: 23", &format!("seed: {seed}"));
        let file = self.hosts.dir.path().join("drill.yaml");
        std::fs::write(&file, text).unwrap();
        let reports = self.hosts.dir.path().join("report");
        let mut command = Command::new(env!("CARGO_BIN_EXE_firedrill"));
        command
            .envs(self.hosts.variables(["INVENTORY", "PRICING"]))
            .env("SHOP_PORT", self.shop.port.to_string())
            .arg("run")
            .arg(&file)
            .arg("--report-dir")
            .arg(&reports);
        Drill::finish(command, &reports)
    }
}

/// A correct service with two dependencies on two agents passes under
/// every seed, each breaker's calls paired by id; the same service leaking
/// while open fails under every seed, naming leaked calls of both.
#[test]
fn a_service_with_two_agent_dependencies_passes_correct_and_fails_leaking_under_every_seed() {
    let runs = blackbox_support::under_seeds(|seed| {
        let correct = TwoDependencies::start(&[]);
        let leaking = TwoDependencies::start(&[("LEAK_EVERY", "5")]);
        let leaked = leaking.run(seed);
        let leaks = services::leaks_in(&leaking.leaks);
        (correct.run(seed), leaked, leaks)
    });
    for (seed, (correct, leaked, leaks)) in runs {
        blackbox_support::passed_paired_by_id(seed, &correct, &["inventory", "pricing"]);
        for proof in [
            "calls to /inventory-db/* while inventory is open == 0",
            "calls to /pricing-db/* while pricing is open == 0",
        ] {
            services::fails_naming_a_leak(&format!("seed {seed}"), &leaked, &leaks, proof);
        }
    }
}

/// An agent that keeps only its 5 newest records drops most of them
/// between two reads of the drill (every half second, at 20 req/s): the
/// inventory breaker's sentences are inconclusive, naming the loss; the
/// catalog's, whose agent lost nothing, are judged and hold.
#[test]
fn an_agent_whose_records_are_cut_leaves_its_breakers_verdicts_inconclusive() {
    let topology = Topology::start_with(&[], &["--records-kept", "5"]);
    let ran = topology.run(&[]);
    assert_eq!(ran.exit, Some(5), "{}", ran.output);
    let findings = ran.report["inconclusive"].as_array().unwrap();
    assert!(
        findings.iter().any(|f| f["breaker"] == "inventory"
            && f["reason"]
                .as_str()
                .unwrap()
                .contains("dependency inventory: its agent dropped")),
        "{findings:?}"
    );
    assert!(
        findings.iter().all(|f| f["breaker"] == "inventory"),
        "{findings:?}"
    );
    let inventory = ran.verdict("calls to /db/inventory/* while inventory is open == 0");
    assert!(inventory["inconclusive"].is_string(), "{inventory}");
    let catalog = ran.verdict("calls to /inventory/* while catalog is open == 0");
    assert_eq!(catalog["passed"], true, "{catalog}");
}

fn toxics(topology: &Topology, i: usize, proxy: &str) -> Vec<String> {
    let (_, toxics) = topology.api(i, &format!("/proxies/{proxy}/toxics"));
    toxics
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

/// Polls (every 50 ms, at most `limit`) until `done`; how long it took.
#[allow(clippy::disallowed_methods, clippy::disallowed_types)]
fn poll_until(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
    let started = std::time::Instant::now();
    while started.elapsed() < limit {
        if done() {
            return Some(started.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// A drill whose inventory fault opens at 1 s and lasts a minute, started
/// in the background; returns once the agent holds the fault.
fn drill_holding_a_fault(topology: &Topology) -> Child {
    let file = topology.experiment(&[
        ("duration: 14s", "duration: 60s"),
        ("at: 2s, for: 2s", "at: 1s, for: 50s"),
        ("proxy: inventory, lease: 3s", "proxy: inventory, lease: 2s"),
    ]);
    let child = topology
        .command(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let applied = poll_until(Duration::from_secs(15), || {
        toxics(topology, 1, "inventory") == ["inventory-500"]
    });
    assert!(applied.is_some(), "the drill never applied its fault");
    child
}

#[test]
fn a_drill_killed_with_kill_9_leaves_the_agent_to_remove_its_fault_when_the_lease_runs_out() {
    let topology = Topology::start(&[]);
    let mut drill = drill_holding_a_fault(&topology);
    drill.kill().unwrap(); // SIGKILL: nothing of the drill runs after it
    drill.wait().unwrap();
    // The drill is gone, its connections closed: the fault stays until its
    // lease runs out, and the agent says that is why it went (an agent that
    // dropped it with the drill's connections would not).
    let removed = poll_until(Duration::from_secs(6), || {
        toxics(&topology, 1, "inventory").is_empty()
    });
    removed.expect("the agent never removed the fault of a dead drill");
    let lapsed = "the lease ran out without a renewal: its toxics are removed";
    let said = poll_until(Duration::from_secs(2), || {
        topology.agent_log(1).contains(lapsed)
    });
    assert!(
        said.is_some(),
        "removed, but not for its lease:\n{}",
        topology.agent_log(1)
    );
    // The catalog's calls pass again: its breaker closes, nothing is faulted.
    let (_, page) = topology.api(1, "/proxies/inventory/records?since=0");
    assert!(page["records"].as_array().is_some_and(|r| !r.is_empty()));
}

#[test]
fn an_interrupted_drill_removes_the_remote_fault_first_and_writes_a_partial_report() {
    let topology = Topology::start(&[]);
    let drill = drill_holding_a_fault(&topology);
    let pid = drill.id().to_string();
    Command::new("kill").args(["-INT", &pid]).status().unwrap();
    let out = drill.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    // Gone at once, not at the lease's end.
    assert!(toxics(&topology, 1, "inventory").is_empty());
    let report = topology.report();
    assert_eq!(report["verdict"], "interrupted");
    let window = &report["agents"][1]["windows"][0];
    assert_eq!(window["fault"], "inventory-500");
    let (on, off) = (
        window["applied_ms"][0].as_f64(),
        window["applied_ms"][1].as_f64(),
    );
    assert!(on.is_some() && off > on, "{window}");
}

/// A drill of `yaml` (one agent dependency) against a service that only
/// accepts connections: its exit code and output.
fn refused_drill(yaml: &str) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("drill.yaml");
    std::fs::write(&file, yaml).unwrap();
    blackbox_support::firedrill(&["run", "--quiet"], &file)
}

fn one_agent_drill(service: u16, agent: &str, fault: &str) -> String {
    format!(
        "name: refused\nduration: 2s\nclock: real\nsystem:\n  url: http://127.0.0.1:{service}\ndependencies:\n  inventory:\n    listen: 127.0.0.1:{}\n    upstream: 127.0.0.1:{}\n    agent: {agent}\nload:\n  - {{ name: stock, request: GET /stock/1, rate: 5/s }}\nfaults:\n  - {fault}\nexpect:\n  - route stock success >= 0%\n",
        free_port(),
        free_port()
    )
}

#[test]
fn an_agent_that_does_not_answer_is_exit_3_at_its_api_key_before_any_load() {
    let service = blackbox_support::silent_service();
    let api = free_port();
    let yaml = one_agent_drill(
        service,
        &format!("{{ api: \"http://127.0.0.1:{api}\" }}"),
        "{ name: s, status: { code: 500 }, at: 1s }",
    );
    let (exit, output) = refused_drill(&yaml);
    assert_eq!(exit, Some(3), "{output}");
    assert!(
        output.contains(":10:") && output.contains("dependencies.inventory.agent.api"),
        "{output}"
    );
    assert!(
        output.contains("Connection refused"),
        "the cause is said: {output}"
    );
    assert!(output.contains(&format!("127.0.0.1:{api}")), "{output}");
}

#[test]
fn an_agent_that_refuses_the_drill_s_token_is_exit_3_at_its_token_key() {
    let service = blackbox_support::silent_service();
    let (_agent, port) = agent(Some("s3cret"), Stdio::null());
    let yaml = one_agent_drill(
        service,
        &format!("{{ api: \"http://127.0.0.1:{port}\", token: wrong }}"),
        "{ name: s, status: { code: 500 }, at: 1s }",
    );
    let (exit, output) = refused_drill(&yaml);
    assert_eq!(exit, Some(3), "{output}");
    assert!(
        output.contains("dependencies.inventory.agent.token"),
        "{output}"
    );
    assert!(output.contains("refused the token"), "{output}");
    assert_eq!(
        api_get(port, "/proxies", Some("s3cret")),
        (200, serde_json::json!({})),
        "nothing made"
    );
}

#[test]
fn an_http_fault_on_a_toxiproxy_agent_is_a_located_error_naming_the_agent_exit_2() {
    let yaml = one_agent_drill(
        1,
        "{ api: \"http://127.0.0.1:9\", kind: toxiproxy }",
        "{ name: s, status: { code: 500 }, at: 1s }",
    );
    let (exit, output) = refused_drill(&yaml);
    assert_eq!(exit, Some(2), "{output}");
    assert!(output.contains("faults[0]"), "{output}");
    assert!(
        output.contains("a Toxiproxy agent cannot apply it"),
        "{output}"
    );
    assert!(
        output.contains("dependencies.inventory.agent at http://127.0.0.1:9"),
        "{output}"
    );
}

#[test]
fn a_game_day_across_two_agents_runs_over_tls_with_client_certificates() {
    // The drill's CA signed each agent's certificate and the drill's own;
    // each agent takes only clients that CA signed (mTLS).
    let dir = tempfile::tempdir().unwrap();
    cert_support::certificates_in(dir.path());
    let file = |name: &str| dir.path().join(name).display().to_string();
    let (cert, key, ca) = (
        file("agent.pem"),
        file("agent-key.pem"),
        file("drill-ca.pem"),
    );
    let tls = [
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--tls-client-ca",
        &ca,
    ];
    let topology = Topology::start_on(Hosts::start_in(dir, &tls, &[]), &[]);
    let over_tls = |n: u8| {
        (
            format!(
                "api: \"http://127.0.0.1:${{AGENT_{n}_PORT:-1847{}}}\"",
                3 + n
            ),
            format!(
                "api: \"https://127.0.0.1:${{AGENT_{n}_PORT:-1847{}}}\", tls: {{ ca_file: drill-ca.pem, client_cert: drill.pem, client_key: drill-key.pem }}",
                3 + n
            ),
        )
    };
    let (first, second) = (over_tls(1), over_tls(2));
    let ran = topology.run(&[(&first.0, &first.1), (&second.0, &second.1)]);
    assert_eq!(
        ran.exit,
        Some(0),
        "{}\n{:#}",
        ran.output,
        ran.report["verdicts"]
    );
    for agent in ran.report["agents"].as_array().unwrap() {
        assert!(
            agent["api"].as_str().unwrap().starts_with("https://"),
            "{agent:#}"
        );
        assert!(
            agent["evidence"]["records"].as_u64().unwrap() > 0,
            "{agent:#}"
        );
    }
}
