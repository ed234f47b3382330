//! The CI and game-day examples under `ci/` are exercised wherever they can
//! be outside a CI service: every YAML file parses and has the structure its
//! service needs; every `firedrill` command they run names an existing
//! subcommand and existing flags; each pipeline installs a pinned release
//! (`cargo install --locked --git "$FIREDRILL_GIT" --tag "$FIREDRILL_VERSION"`,
//! only on a cache miss, the cache keyed by the version, the binary on PATH
//! before use; GitLab's install lines run for real with a stand-in cargo);
//! every experiment they reference exists and
//! loads; the JUnit paths they publish match what the commands write (by
//! running ci/run-experiments.sh and matching the published glob); the
//! game-day script writes the staging URL into the drill and runs it in real
//! time against a loopback target, including a halt.
//!
//! Scripts run as real processes with the built binary first on PATH, on
//! loopback only, each under a generous timeout.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};
use std::time::Duration;

use assert_cmd::Command;
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use serde_yaml_ng::Value;

/// Generous: a debug build on a shared machine.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(300);

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn firedrill_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_firedrill"))
}

/// PATH with the built firedrill first, as after `cargo install`.
fn path_with_firedrill() -> std::ffi::OsString {
    let mut dirs = vec![firedrill_bin().parent().unwrap().to_path_buf()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn yaml(rel: &str) -> Value {
    serde_yaml_ng::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn str_of<'a>(v: &'a Value, what: &str) -> &'a str {
    v.as_str()
        .unwrap_or_else(|| panic!("{what}: expected a string, found {v:?}"))
}

/// Every file under `ci/`, relative to the repository, sorted.
fn ci_files() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root().join("ci"), &mut files);
    let mut rel: Vec<String> = files
        .iter()
        .map(|p| p.strip_prefix(root()).unwrap().display().to_string())
        .collect();
    rel.sort();
    rel
}

fn is_yaml(rel: &str) -> bool {
    rel.ends_with(".yml") || rel.ends_with(".yaml")
}

/// A firedrill experiment kept beside the CI files (it has `load`).
fn is_experiment(rel: &str) -> bool {
    is_yaml(rel) && yaml(rel).get("load").is_some()
}

/// A CI pipeline definition (GitHub Actions, GitLab CI).
fn is_pipeline(rel: &str) -> bool {
    is_yaml(rel) && !is_experiment(rel)
}

// ---------------------------------------------------------------------------
// Shell commands in the files
// ---------------------------------------------------------------------------

/// The shell commands a CI file runs: GitHub steps' `run`, GitLab jobs'
/// `before_script`/`script`, and the non-comment lines of scripts and the
/// crontab.
fn commands_in(rel: &str) -> Vec<String> {
    if is_experiment(rel) || rel.ends_with(".js") {
        Vec::new()
    } else if rel.ends_with(".md") {
        // The commands of the ```sh blocks, one per line (continuations
        // joined), comments dropped.
        let mut out = Vec::new();
        let mut in_sh = false;
        let mut pending = String::new();
        for line in read(rel).lines() {
            let t = line.trim();
            if t.starts_with("```") {
                in_sh = !in_sh && t == "```sh";
                continue;
            }
            if !in_sh || t.is_empty() || t.starts_with('#') {
                continue;
            }
            let t = t.split(" #").next().unwrap_or(t).trim_end();
            match t.strip_suffix('\\') {
                Some(head) => pending.push_str(&format!("{head} ")),
                None => out.push(std::mem::take(&mut pending) + t),
            }
        }
        out
    } else if is_yaml(rel) {
        let doc = yaml(rel);
        let mut out = Vec::new();
        let mapping = doc.as_mapping().unwrap();
        if let Some(jobs) = doc.get("jobs").and_then(Value::as_mapping) {
            for job in jobs.values() {
                for step in job["steps"].as_sequence().unwrap() {
                    if let Some(run) = step.get("run") {
                        out.extend(str_of(run, "run").lines().map(str::to_string));
                    }
                }
            }
        } else {
            for job in mapping.values() {
                for key in ["before_script", "script"] {
                    if let Some(lines) = job.get(key).and_then(Value::as_sequence) {
                        out.extend(lines.iter().map(|l| str_of(l, key).to_string()));
                    }
                }
            }
        }
        out
    } else {
        read(rel)
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    }
}

/// Splits a command line into words, honouring simple quotes.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (None, '"' | '\'') => {
                quote = Some(c);
                any = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, c) if c.is_whitespace() => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            (_, c) => {
                cur.push(c);
                any = true;
            }
        }
    }
    if any {
        out.push(cur);
    }
    out
}

/// A `firedrill SUB ARGS...` invocation found in a command line.
#[derive(Debug)]
struct Invocation {
    file: String,
    line: String,
    sub: String,
    args: Vec<String>,
}

/// Words that run the firedrill binary: the name, or the scripts' variable
/// holding it.
fn is_firedrill(word: &str) -> bool {
    matches!(
        word,
        "firedrill" | "$firedrill" | "${firedrill}" | "$FIREDRILL" | "${FIREDRILL}"
    )
}

fn invocations() -> Vec<Invocation> {
    let mut out = Vec::new();
    for file in ci_files() {
        for line in commands_in(&file) {
            let w = words(&line);
            for (i, word) in w.iter().enumerate() {
                if !is_firedrill(word) || i + 1 >= w.len() {
                    continue;
                }
                let args: Vec<String> = w[i + 2..]
                    .iter()
                    .take_while(|a| !matches!(a.as_str(), ";" | "&&" | "||" | "|"))
                    .filter(|a| !a.starts_with("2>") && !a.starts_with('>'))
                    .cloned()
                    .collect();
                out.push(Invocation {
                    file: file.clone(),
                    line: line.clone(),
                    sub: w[i + 1].clone(),
                    args,
                });
            }
        }
    }
    out
}

/// `firedrill SUB --help`; for a top-level flag (`firedrill --version`),
/// `firedrill --help`.
fn help(sub: &str) -> String {
    let args = if sub.starts_with('-') {
        vec!["--help"]
    } else {
        vec![sub, "--help"]
    };
    let out = Command::new(firedrill_bin()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "`firedrill {sub} --help` failed: no such subcommand?\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_firedrill_command_in_ci_uses_an_existing_subcommand_flags_and_clock_values() {
    let found = invocations();
    let files: BTreeSet<&str> = found.iter().map(|i| i.file.as_str()).collect();
    for script in ["ci/run-experiments.sh", "ci/gameday/run-drill.sh"] {
        assert!(
            files.contains(script),
            "{script} runs firedrill; found invocations: {found:#?}"
        );
    }
    for inv in &found {
        let text = help(&inv.sub);
        if inv.sub.starts_with('-') {
            assert!(
                text.split(|c: char| c.is_whitespace() || c == ',')
                    .any(|w| w == inv.sub),
                "{}: `{}`: `firedrill --help` has no {}",
                inv.file,
                inv.line,
                inv.sub
            );
        }
        for (i, arg) in inv.args.iter().enumerate() {
            let Some(flag) = arg.strip_prefix("--") else {
                continue;
            };
            let flag = flag.split('=').next().unwrap();
            assert!(
                text.split(|c: char| c.is_whitespace() || c == ',')
                    .any(|w| w == format!("--{flag}")),
                "{}: `{}`: `firedrill {} --help` has no --{flag}",
                inv.file,
                inv.line,
                inv.sub
            );
            if flag == "clock" {
                let value = &inv.args[i + 1];
                assert!(
                    text.contains(&format!("- {value}:")),
                    "{}: --clock {value} is not one of the listed values",
                    inv.file
                );
            }
        }
    }
    let clocks: BTreeSet<(&str, &str)> = found
        .iter()
        .filter_map(|inv| {
            let at = inv.args.iter().position(|a| a == "--clock")?;
            Some((inv.file.as_str(), inv.args[at + 1].as_str()))
        })
        .collect();
    assert!(
        clocks.contains(&("ci/run-experiments.sh", "virtual")),
        "{clocks:?}"
    );
    assert!(
        clocks.contains(&("ci/gameday/run-drill.sh", "real")),
        "{clocks:?}"
    );
}

#[test]
fn every_script_the_ci_files_call_exists_and_every_shell_script_parses() {
    let mut called = BTreeSet::new();
    for file in ci_files() {
        for line in commands_in(&file) {
            for w in words(&line) {
                if w.ends_with(".sh") {
                    called.insert((file.clone(), w));
                }
            }
        }
    }
    for script in ["ci/run-experiments.sh", "ci/gameday/run-drill.sh"] {
        assert!(
            called.iter().any(|(_, s)| s == script),
            "nothing calls {script}: {called:?}"
        );
    }
    for (file, script) in &called {
        assert!(
            root().join(script).is_file(),
            "{file} calls {script}, which does not exist"
        );
    }
    for file in ci_files().iter().filter(|f| f.ends_with(".sh")) {
        let out = Command::new("bash")
            .arg("-n")
            .arg(root().join(file))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

// ---------------------------------------------------------------------------
// Experiments the files reference
// ---------------------------------------------------------------------------

/// The game-day drill's target.url, a variable set by ci/gameday/run-drill.sh.
const PLACEHOLDER: &str = "${STAGING_URL}";

/// Loads an experiment as `firedrill run` does (its `load`), with the
/// game-day placeholder replaced by `url` when present.
fn load_experiment(path: &Path, url: &str) -> Result<firedrill::experiment::file::Loaded, String> {
    let text = std::fs::read_to_string(path).unwrap();
    if !text.contains(PLACEHOLDER) {
        return firedrill::experiment::file::load(path).map_err(|e| e.to_string());
    }
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join(path.file_name().unwrap());
    std::fs::write(&copy, text.replace(PLACEHOLDER, url)).unwrap();
    firedrill::experiment::file::load(&copy).map_err(|e| e.to_string())
}

#[test]
fn every_experiment_path_in_ci_exists_and_loads() {
    let re = regex::Regex::new(r"(?:^|[\s=:\-])(experiments(?:/[A-Za-z0-9_.-]+)*)").unwrap();
    let mut referenced = BTreeSet::new();
    for file in ci_files() {
        for line in commands_in(&file) {
            for cap in re.captures_iter(&line) {
                referenced.insert((file.clone(), cap[1].to_string()));
            }
        }
    }
    let paths: BTreeSet<&str> = referenced.iter().map(|(_, p)| p.as_str()).collect();
    assert!(
        paths.contains("experiments") && paths.contains("experiments/gameday/staging-drill.yaml"),
        "{referenced:?}"
    );
    let mut loaded = 0;
    for (file, rel) in &referenced {
        let path = root().join(rel);
        assert!(
            path.exists(),
            "{file} references {rel}, which does not exist"
        );
        let targets: Vec<PathBuf> = if path.is_dir() {
            std::fs::read_dir(&path)
                .unwrap()
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "yaml" || e == "yml"))
                .collect()
        } else {
            vec![path]
        };
        assert!(!targets.is_empty(), "{file}: {rel} holds no experiment");
        for target in targets {
            let experiment = load_experiment(&target, "http://127.0.0.1:9")
                .unwrap_or_else(|e| panic!("{file} references {rel}: {e}"));
            assert!(!experiment.expectations.is_empty(), "{}", target.display());
            loaded += 1;
        }
    }
    assert!(
        loaded >= 15,
        "the top-level experiments and the drill: {loaded}"
    );
}

#[test]
fn game_day_drill_is_a_real_time_drill_against_the_url_placeholder_with_halt_conditions() {
    let path = root().join("experiments/gameday/staging-drill.yaml");
    let loaded = load_experiment(&path, "http://127.0.0.1:18080").unwrap();
    let e = &loaded.experiment;
    assert_eq!(e.clock, firedrill::experiment::config::ClockKind::Real);
    assert!(
        matches!(&e.target, firedrill::experiment::config::TargetSpec::Url(u) if u.endpoint.url() == "http://127.0.0.1:18080"),
        "{:?}",
        e.target
    );
    assert!(loaded.halts.len() >= 2, "{:?}", loaded.halts);
    assert!(!e.faults.is_empty());
    // Without STAGING_URL in the environment the drill is refused, naming
    // the variable where the file uses it.
    let err = match firedrill::experiment::file::load(&path) {
        Ok(_) => panic!("the drill must not load without STAGING_URL"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("variable STAGING_URL is not set") && err.contains(PLACEHOLDER),
        "{err}"
    );
}

#[test]
fn top_level_experiments_folder_does_not_hold_the_game_day_drill() {
    // tests/experiments.rs runs every experiments/*.yaml in virtual time; a
    // drill with a URL target cannot run there, so it lives in a subfolder.
    for entry in std::fs::read_dir(root().join("experiments")).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            let text = std::fs::read_to_string(&path).unwrap();
            assert!(
                !text.contains(PLACEHOLDER),
                "{} holds the game-day placeholder",
                path.display()
            );
        }
    }
}

// ---------------------------------------------------------------------------
// ci/run-experiments.sh
// ---------------------------------------------------------------------------

/// Runs `bash ci/run-experiments.sh ARGS` in `cwd` with firedrill on PATH.
fn run_experiments(cwd: &Path, args: &[&str]) -> Output {
    Command::new("bash")
        .arg(root().join("ci/run-experiments.sh"))
        .args(args)
        .current_dir(cwd)
        .env("PATH", path_with_firedrill())
        .env_remove("FIREDRILL")
        .timeout(SCRIPT_TIMEOUT)
        .output()
        .unwrap()
}

fn describe(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn junit(path: &Path) -> Report {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Report::deserialize_from_str(&text)
        .unwrap_or_else(|e| panic!("{}: {e}\n{text}", path.display()))
}

/// A work folder with `dir/` holding copies of the named experiments.
fn workspace(dir: &str, experiments: &[(&str, &str)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let to = tmp.path().join(dir);
    std::fs::create_dir_all(&to).unwrap();
    for (name, from) in experiments {
        std::fs::copy(root().join(from), to.join(name)).unwrap();
    }
    tmp
}

#[test]
fn run_experiments_script_runs_top_level_experiments_in_virtual_time_one_junit_each() {
    let tmp = workspace(
        "experiments",
        &[
            // `clock: real` in the file, 12 s: the script's --clock virtual wins.
            ("quickstart.yaml", "experiments/quickstart.yaml"),
            ("outage.yaml", "experiments/outage_contained.yaml"),
        ],
    );
    // A subfolder is not run (this one could not run at all).
    let sub = tmp.path().join("experiments/gameday");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::write(sub.join("broken.yaml"), "name: [\n").unwrap();

    let out = run_experiments(tmp.path(), &["experiments", "reports"]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    for (name, cases) in [("quickstart", 5), ("outage", 7)] {
        let dir = tmp.path().join("reports").join(name);
        let report = junit(&dir.join("junit.xml"));
        assert_eq!(
            (report.tests, report.failures, report.errors),
            (cases, 0, 0),
            "{name}"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap())
                .unwrap();
        assert_eq!(json["clock"], "virtual", "{name}");
        assert!(dir.join("journal.jsonl").is_file());
    }
    let ran: BTreeSet<String> = std::fs::read_dir(tmp.path().join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        ran,
        BTreeSet::from(["outage".to_string(), "quickstart".to_string()])
    );
}

#[test]
fn run_experiments_script_exits_1_when_one_fails_and_still_runs_the_rest() {
    let tmp = workspace(
        "exp",
        &[
            (
                "a_wrong.yaml",
                "fixtures/experiments/wrong_expectation.yaml",
            ),
            ("b_quickstart.yaml", "experiments/quickstart.yaml"),
        ],
    );
    let out = run_experiments(tmp.path(), &["exp", "out"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let wrong = junit(&tmp.path().join("out/a_wrong/junit.xml"));
    assert_eq!((wrong.tests, wrong.failures), (2, 1));
    let good = junit(&tmp.path().join("out/b_quickstart/junit.xml"));
    assert_eq!((good.tests, good.failures, good.errors), (5, 0, 0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("1 of 2 experiment(s) failed") && stdout.contains("a_wrong.yaml (exit 1"),
        "{stdout}"
    );
}

#[test]
fn run_experiments_script_turns_an_experiment_that_cannot_run_into_a_junit_error() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("exp")).unwrap();
    // An unknown key with XML's special characters in its name.
    std::fs::write(
        tmp.path().join("exp/bad.yaml"),
        "name: bad\nduration: 1s\nload: []\n\"odd<&>\": 1\n",
    )
    .unwrap();
    let out = run_experiments(tmp.path(), &["exp", "out"]);
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let report = junit(&tmp.path().join("out/bad/junit.xml"));
    assert_eq!((report.tests, report.errors), (1, 1));
    let case = &report.test_suites[0].test_cases[0];
    let TestCaseStatus::NonSuccess {
        kind: NonSuccessKind::Error,
        message,
        description,
        ..
    } = &case.status
    else {
        panic!("{:?}", case.status);
    };
    assert_eq!(
        message.as_ref().map(|m| m.as_str()),
        Some("firedrill run exited 2")
    );
    let description = description.as_ref().unwrap().as_str();
    assert!(
        description.contains("error: exp/bad.yaml:") && description.contains("odd<&>"),
        "{description}"
    );
}

#[test]
fn run_experiments_script_exits_2_when_the_folder_holds_no_experiment() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    let out = run_experiments(tmp.path(), &["empty", "out"]);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no *.yaml or *.yml in empty"));
}

/// The `ci/run-experiments.sh DIR OUT` call in a list of commands.
fn run_experiments_call(commands: &[String]) -> (String, String) {
    let calls: Vec<Vec<String>> = commands
        .iter()
        .map(|l| words(l))
        .filter(|w| w.iter().any(|x| x == "ci/run-experiments.sh"))
        .collect();
    assert_eq!(
        calls.len(),
        1,
        "one call of ci/run-experiments.sh: {commands:?}"
    );
    let w = &calls[0];
    assert_eq!(w[0], "bash", "{w:?}");
    let at = w.iter().position(|x| x == "ci/run-experiments.sh").unwrap();
    assert_eq!(w.len(), at + 3, "DIR and OUT given explicitly: {w:?}");
    (w[at + 1].clone(), w[at + 2].clone())
}

/// Runs the script as the CI file calls it (its DIR holding two quick
/// experiments) and checks that the published glob matches exactly the
/// JUnit file of each.
fn published_glob_matches_what_the_script_writes(ci_file: &str, commands: &[String], glob: &str) {
    let (dir, out_dir) = run_experiments_call(commands);
    assert_eq!(dir, "experiments", "{ci_file} runs the experiments folder");
    let tmp = workspace(
        &dir,
        &[
            ("quickstart.yaml", "experiments/quickstart.yaml"),
            ("slow_calls.yaml", "experiments/slow_calls.yaml"),
        ],
    );
    let out = run_experiments(tmp.path(), &[&dir, &out_dir]);
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));

    let matcher = globset::GlobBuilder::new(glob)
        .literal_separator(true)
        .build()
        .unwrap()
        .compile_matcher();
    let mut matched = BTreeSet::new();
    let mut stack = vec![tmp.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let rel = path.strip_prefix(tmp.path()).unwrap();
                if matcher.is_match(rel) {
                    matched.insert(rel.display().to_string());
                }
            }
        }
    }
    let expected: BTreeSet<String> = ["quickstart", "slow_calls"]
        .iter()
        .map(|n| format!("{out_dir}/{n}/junit.xml"))
        .collect();
    assert_eq!(matched, expected, "{ci_file}: `{glob}`");
    for file in &matched {
        let report = junit(&tmp.path().join(file));
        assert!(report.tests > 0 && report.failures == 0, "{file}");
    }
}

// ---------------------------------------------------------------------------
// ci/github-actions.yml and ci/gitlab-ci.yml
// ---------------------------------------------------------------------------

fn steps(workflow: &Value) -> &Vec<Value> {
    let jobs = workflow["jobs"].as_mapping().expect("jobs");
    assert_eq!(jobs.len(), 1, "one job");
    jobs.values().next().unwrap()["steps"]
        .as_sequence()
        .expect("steps")
}

fn step_index(steps: &[Value], what: &str, pick: impl Fn(&Value) -> bool) -> usize {
    steps
        .iter()
        .position(pick)
        .unwrap_or_else(|| panic!("no step that {what}: {steps:#?}"))
}

fn uses(step: &Value) -> &str {
    step.get("uses").and_then(Value::as_str).unwrap_or("")
}

fn run(step: &Value) -> &str {
    step.get("run").and_then(Value::as_str).unwrap_or("")
}

/// An action reference pinned to a version tag or a commit (for
/// dtolnay/rust-toolchain the ref names the toolchain by design).
fn assert_pinned(action: &str) {
    let (name, version) = action
        .split_once('@')
        .unwrap_or_else(|| panic!("{action}: no @version"));
    if name == "dtolnay/rust-toolchain" {
        assert!(version == "stable" || version.starts_with("1."), "{action}");
        return;
    }
    let tag = version
        .strip_prefix('v')
        .is_some_and(|v| !v.is_empty() && v.split('.').all(|p| p.parse::<u32>().is_ok()));
    let sha = version.len() == 40 && version.chars().all(|c| c.is_ascii_hexdigit());
    assert!(tag || sha, "{action}: pin a version tag or a commit");
}

/// Runs even when an earlier step failed.
fn runs_after_failure(step: &Value) -> bool {
    let cond = step.get("if").and_then(Value::as_str).unwrap_or("");
    cond.contains("always()") || cond.contains("!cancelled()")
}

// ---------------------------------------------------------------------------
// Installing a pinned firedrill (every pipeline example)
// ---------------------------------------------------------------------------

/// The variables a pipeline example installs firedrill with: where it comes
/// from and the release tag.
const PIN_VARIABLES: [&str; 2] = ["FIREDRILL_GIT", "FIREDRILL_VERSION"];

/// The file's header (its leading comment lines) tells the user to set
/// both variables, and `vars` (the file's variables) sets them: a git URL
/// and a release tag `vX.Y.Z`.
fn assert_pin_variables(file: &str, vars: &[(String, String)]) {
    let header: String = read(file)
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    for name in PIN_VARIABLES {
        assert!(header.contains(name), "{file}: the header explains {name}");
    }
    let value = |name: &str| {
        vars.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("{file} sets no {name}: {vars:?}"))
    };
    let git = value("FIREDRILL_GIT");
    assert!(
        git.starts_with("https://") && git.ends_with(".git"),
        "{file}: {git}"
    );
    let tag = value("FIREDRILL_VERSION");
    let release = tag.strip_prefix('v').is_some_and(|v| {
        v.split('.').count() == 3 && v.split('.').all(|p| p.parse::<u32>().is_ok())
    });
    assert!(
        release,
        "{file}: FIREDRILL_VERSION {tag} is not a tag like v0.1.0"
    );
}

/// String pairs of a YAML mapping (`env:`, `variables:`); empty when absent.
fn string_pairs(v: &Value) -> Vec<(String, String)> {
    v.as_mapping()
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        str_of(k, "name").to_string(),
                        str_of(v, "value").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Checks the `cargo install` in a command line: the pinned release with its
/// own Cargo.lock (`--locked --git "$FIREDRILL_GIT" --tag "$FIREDRILL_VERSION"
/// firedrill`), never `--path` (which works only inside firedrill's own
/// repository). Returns its `--root`, if any.
fn assert_pinned_install(file: &str, line: &str) -> Option<String> {
    let w = words(line);
    let at = w
        .windows(2)
        .position(|p| p[0] == "cargo" && p[1] == "install")
        .unwrap_or_else(|| panic!("{file}: no cargo install in `{line}`"));
    let args = &w[at + 2..];
    let value = |flag: &str| {
        let i = args.iter().position(|a| a == flag)?;
        args.get(i + 1).cloned()
    };
    assert!(args.iter().any(|a| a == "--locked"), "{file}: `{line}`");
    assert!(!args.iter().any(|a| a == "--path"), "{file}: `{line}`");
    for (flag, var) in [("--git", "FIREDRILL_GIT"), ("--tag", "FIREDRILL_VERSION")] {
        assert!(
            line.contains(&format!("{flag} \"${var}\"")),
            "{file}: `{line}` installs {flag} \"${var}\""
        );
        assert_eq!(value(flag), Some(format!("${var}")), "{file}: `{line}`");
    }
    assert_eq!(args.last().map(String::as_str), Some("firedrill"), "{file}");
    value("--root")
}

/// Checks how a GitHub workflow gets firedrill: the pinned install runs only
/// when actions/cache has no binary for this FIREDRILL_VERSION, the cached
/// file is where `cargo install` puts it, and its folder goes on PATH.
/// Returns the index of the step after which `firedrill` is on PATH.
fn assert_github_installs_pinned_firedrill(file: &str, wf: &Value) -> usize {
    let job = wf["jobs"].as_mapping().unwrap().values().next().unwrap();
    let mut vars = string_pairs(&wf["env"]);
    vars.extend(string_pairs(&job["env"]));
    assert_pin_variables(file, &vars);
    let steps = steps(wf);
    let cache = step_index(steps, "caches firedrill", |s| {
        uses(s).starts_with("actions/cache@")
    });
    let with = &steps[cache]["with"];
    let cached = str_of(&with["path"], "cache path");
    assert_eq!(
        cached, "~/.cargo/bin/firedrill",
        "{file}: where cargo install puts it"
    );
    let key = str_of(&with["key"], "cache key");
    assert!(
        key.contains("${{ env.FIREDRILL_VERSION }}"),
        "{file}: the cache key {key} names the version"
    );
    let id = str_of(&steps[cache]["id"], "cache step id");
    let on_miss = format!("steps.{id}.outputs.cache-hit != 'true'");
    let install = step_index(steps, "installs firedrill", |s| {
        run(s).contains("cargo install")
    });
    assert_eq!(
        assert_pinned_install(file, run(&steps[install])),
        None,
        "{file}: into ~/.cargo/bin, the cached path"
    );
    let rust = step_index(steps, "installs Rust", |s| {
        uses(s).starts_with("dtolnay/rust-toolchain@")
    });
    for (what, at) in [("Rust", rust), ("firedrill", install)] {
        assert_eq!(
            steps[at].get("if").and_then(Value::as_str),
            Some(on_miss.as_str()),
            "{file}: {what} is installed only on a cache miss"
        );
    }
    let on_path = step_index(steps, "puts ~/.cargo/bin on PATH", |s| {
        run(s).contains("\"$HOME/.cargo/bin\" >> \"$GITHUB_PATH\"")
    });
    assert!(
        steps[on_path].get("if").is_none(),
        "{file}: on a cache hit too"
    );
    assert!(
        cache < rust && rust < install && install < on_path,
        "{file}"
    );
    on_path
}

/// The index of the first GitHub step or GitLab script line that runs
/// `firedrill` or a script that does (the install names the package, it
/// does not run it).
fn first_use(commands: &[&str]) -> usize {
    commands
        .iter()
        .position(|c| {
            let w = words(c);
            !c.contains("cargo install")
                && w.iter().any(|x| is_firedrill(x) || x.starts_with("ci/"))
        })
        .unwrap_or_else(|| panic!("nothing runs firedrill: {commands:?}"))
}

/// Checks how a GitLab job gets firedrill: the pinned install into a
/// `--root` folder runs only when that folder, cached under a key naming
/// FIREDRILL_VERSION, has no binary; its bin/ goes on PATH before use. Then
/// runs the script up to its first use of firedrill for real, twice in one
/// project folder (a cache miss, then the folder restored), with a stand-in
/// `cargo` that logs its arguments and installs the built binary into
/// `--root`: the first run installs once with the file's variables, the
/// second does not, and both find that binary on PATH.
fn assert_gitlab_installs_pinned_firedrill(file: &str, doc: &Value, job: &Value) {
    let mut vars = string_pairs(&doc["variables"]);
    vars.extend(string_pairs(&job["variables"]));
    assert_pin_variables(file, &vars);
    let script: Vec<&str> = job["script"]
        .as_sequence()
        .expect("script")
        .iter()
        .map(|l| str_of(l, "script"))
        .collect();
    let install = script
        .iter()
        .position(|l| l.contains("cargo install"))
        .unwrap_or_else(|| panic!("{file}: no cargo install"));
    let root_dir = assert_pinned_install(file, script[install])
        .unwrap_or_else(|| panic!("{file}: install with --root into the cached folder"));
    assert!(
        script[install].starts_with(&format!("test -x {root_dir}/bin/firedrill || ")),
        "{file}: install only when the cache has no binary: `{}`",
        script[install]
    );
    let key = str_of(&job["cache"]["key"], "cache.key");
    assert!(
        key.contains("$FIREDRILL_VERSION") || key.contains("${FIREDRILL_VERSION}"),
        "{file}: the cache key {key} names the version"
    );
    assert!(
        job["cache"]["paths"]
            .as_sequence()
            .expect("cache.paths")
            .iter()
            .any(|p| str_of(p, "cache path").trim_end_matches('/') == root_dir),
        "{file}: {root_dir} is cached"
    );
    let used = first_use(&script);
    assert!(install < used, "{file}: installed before use");

    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(&bin).unwrap();
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        "#!/bin/bash\nprintf '%s\\n' \"$*\" >> \"$CARGO_LOG\"\n\
         root=; prev=; for a in \"$@\"; do [ \"$prev\" = --root ] && root=$a; prev=$a; done\n\
         mkdir -p \"$root/bin\" && cp \"$FIREDRILL_BUILT\" \"$root/bin/firedrill\"\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let log = tmp.path().join("cargo.log");
    let shell = format!(
        "set -euo pipefail\n{}\ncommand -v firedrill\nfiredrill --version\n",
        script[..used].join("\n")
    );
    for round in ["cache miss", "cache restored"] {
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(&shell)
            .current_dir(&project)
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
            .env("HOME", tmp.path())
            .env("CI_PROJECT_DIR", &project)
            .env("CARGO_LOG", &log)
            .env("FIREDRILL_BUILT", firedrill_bin())
            .envs(vars.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        assert!(out.status.success(), "{file}, {round}: {}", describe(&out));
        let stdout = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = stdout.lines().collect();
        let [.., found, version] = lines[..] else {
            panic!("{file}, {round}: {stdout}");
        };
        assert_eq!(
            Path::new(found),
            project.join(&root_dir).join("bin/firedrill"),
            "{file}, {round}: firedrill on PATH is the installed one"
        );
        assert!(
            version.starts_with("firedrill "),
            "{file}, {round}: {stdout}"
        );
    }
    let value = |name: &str| &vars.iter().find(|(n, _)| n == name).unwrap().1;
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        format!(
            "install --locked --git {} --tag {} --root {root_dir} firedrill\n",
            value("FIREDRILL_GIT"),
            value("FIREDRILL_VERSION")
        ),
        "{file}: one install, on the cache miss only"
    );
}

#[test]
fn github_workflow_installs_pinned_firedrill_once_per_version_runs_every_experiment_and_publishes_its_junit()
 {
    let wf = yaml("ci/github-actions.yml");
    assert!(
        wf["on"].get("push").is_some() && wf["on"].get("pull_request").is_some(),
        "{:?}",
        wf["on"]
    );
    assert_eq!(
        wf["permissions"]["checks"], "write",
        "the JUnit action creates a check run"
    );
    let steps = steps(&wf);
    for step in steps {
        if !uses(step).is_empty() {
            assert_pinned(uses(step));
        }
        assert!(step.get("continue-on-error").is_none(), "{step:?}");
    }
    let checkout = step_index(steps, "checks out", |s| {
        uses(s).starts_with("actions/checkout@")
    });
    let on_path = assert_github_installs_pinned_firedrill("ci/github-actions.yml", &wf);
    let experiments = step_index(steps, "runs the experiments", |s| {
        run(s).contains("ci/run-experiments.sh")
    });
    let publish = step_index(steps, "publishes JUnit", |s| {
        uses(s) == "mikepenz/action-junit-report@v5"
    });
    let runs: Vec<&str> = steps.iter().map(run).collect();
    assert!(on_path < first_use(&runs), "firedrill on PATH before use");
    assert!(checkout < experiments && on_path < experiments && experiments < publish);
    assert!(
        runs_after_failure(&steps[publish]),
        "the report is published when an experiment failed too"
    );
    let with = &steps[publish]["with"];
    assert_eq!(with["require_tests"], true, "an empty report is a failure");
    let commands: Vec<String> = run(&steps[experiments])
        .lines()
        .map(str::to_string)
        .collect();
    published_glob_matches_what_the_script_writes(
        "ci/github-actions.yml",
        &commands,
        str_of(&with["report_paths"], "report_paths"),
    );
}

#[test]
fn gitlab_job_installs_pinned_firedrill_once_per_version_runs_every_experiment_and_reports_its_junit()
 {
    let doc = yaml("ci/gitlab-ci.yml");
    let job = &doc["firedrill-experiments"];
    assert!(str_of(&job["image"], "image").starts_with("rust:"));
    assert!(
        job.get("allow_failure").is_none(),
        "a failed experiment fails the job"
    );
    let script: Vec<String> = job["script"]
        .as_sequence()
        .expect("script")
        .iter()
        .map(|l| str_of(l, "script").to_string())
        .collect();
    assert_gitlab_installs_pinned_firedrill("ci/gitlab-ci.yml", &doc, job);
    assert_eq!(
        job["artifacts"]["when"], "always",
        "reports kept on failure"
    );
    let glob = str_of(
        &job["artifacts"]["reports"]["junit"],
        "artifacts.reports.junit",
    );
    let (_, out_dir) = run_experiments_call(&script);
    assert!(
        job["artifacts"]["paths"]
            .as_sequence()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap().trim_end_matches('/') == out_dir),
        "the whole report folder is kept"
    );
    published_glob_matches_what_the_script_writes("ci/gitlab-ci.yml", &script, glob);
}

// ---------------------------------------------------------------------------
// ci/gameday/
// ---------------------------------------------------------------------------

/// Checks a five-field cron expression: numbers in range, `*`, lists,
/// ranges and steps.
fn assert_cron(expr: &str) {
    let fields: Vec<&str> = expr.split_whitespace().collect();
    assert_eq!(fields.len(), 5, "`{expr}`: five fields");
    let ranges = [(0, 59), (0, 23), (1, 31), (1, 12), (0, 7)];
    for (field, (lo, hi)) in fields.iter().zip(ranges) {
        for part in field.split(',') {
            let (base, step) = match part.split_once('/') {
                Some((b, s)) => (b, Some(s)),
                None => (part, None),
            };
            if let Some(step) = step {
                assert!(step.parse::<u32>().is_ok_and(|s| s > 0), "`{expr}`: {part}");
            }
            if base == "*" {
                continue;
            }
            for n in base.split('-') {
                let n: u32 = n.parse().unwrap_or_else(|_| panic!("`{expr}`: {part}"));
                assert!((lo..=hi).contains(&n), "`{expr}`: {n} outside {lo}-{hi}");
            }
        }
    }
}

/// The drill's length, to compare with the jobs' timeouts.
fn drill_minutes() -> f64 {
    let path = root().join("experiments/gameday/staging-drill.yaml");
    load_experiment(&path, "http://127.0.0.1:9")
        .unwrap()
        .experiment
        .duration
        .as_secs_f64()
        / 60.0
}

/// The `ci/gameday/run-drill.sh REPORT_DIR` call in a list of commands.
fn run_drill_call(commands: &[String]) -> String {
    let w: Vec<String> = commands
        .iter()
        .map(|l| words(l))
        .find(|w| w.iter().any(|x| x == "ci/gameday/run-drill.sh"))
        .unwrap_or_else(|| panic!("no call of ci/gameday/run-drill.sh: {commands:?}"));
    let at = w
        .iter()
        .position(|x| x == "ci/gameday/run-drill.sh")
        .unwrap();
    w[at + 1].clone()
}

#[test]
fn github_game_day_is_scheduled_installs_pinned_firedrill_reads_the_url_from_a_variable_and_keeps_the_report()
 {
    let wf = yaml("ci/gameday/github-actions.yml");
    let schedule = wf["on"]["schedule"].as_sequence().expect("on.schedule");
    assert!(!schedule.is_empty());
    for entry in schedule {
        assert_cron(str_of(&entry["cron"], "cron"));
    }
    assert!(wf.get("concurrency").is_some(), "never two drills at once");
    let job = wf["jobs"].as_mapping().unwrap().values().next().unwrap();
    let url = str_of(&job["env"]["STAGING_URL"], "env.STAGING_URL");
    assert!(
        url.starts_with("${{ vars.") || url.starts_with("${{ secrets."),
        "from a CI variable: {url}"
    );
    let timeout = job["timeout-minutes"].as_f64().expect("timeout-minutes");
    assert!(
        timeout > drill_minutes() + 10.0,
        "{timeout} min for a {} min drill",
        drill_minutes()
    );
    let steps = steps(&wf);
    for step in steps {
        if !uses(step).is_empty() {
            assert_pinned(uses(step));
        }
    }
    let on_path = assert_github_installs_pinned_firedrill("ci/gameday/github-actions.yml", &wf);
    let drill = step_index(steps, "runs the drill", |s| {
        run(s).contains("ci/gameday/run-drill.sh")
    });
    let runs: Vec<&str> = steps.iter().map(run).collect();
    assert!(on_path < first_use(&runs), "firedrill on PATH before use");
    let commands: Vec<String> = run(&steps[drill]).lines().map(str::to_string).collect();
    let report_dir = run_drill_call(&commands);
    let upload = step_index(steps, "uploads the report", |s| {
        uses(s).starts_with("actions/upload-artifact@")
    });
    assert!(drill < upload);
    assert!(
        runs_after_failure(&steps[upload]),
        "kept when the drill halts"
    );
    assert_eq!(
        str_of(&steps[upload]["with"]["path"], "path").trim_end_matches('/'),
        report_dir
    );
}

#[test]
fn gitlab_game_day_runs_only_in_its_schedule_installs_pinned_firedrill_and_keeps_the_report_and_junit()
 {
    let doc = yaml("ci/gameday/gitlab-ci.yml");
    let job = &doc["firedrill-gameday"];
    let rules = job["rules"].as_sequence().expect("rules");
    assert!(
        rules
            .iter()
            .all(|r| str_of(&r["if"], "rules.if").contains("$CI_PIPELINE_SOURCE == \"schedule\"")),
        "{rules:?}"
    );
    let timeout = str_of(&job["timeout"], "timeout");
    let minutes: f64 = timeout
        .strip_suffix(" minutes")
        .unwrap_or_else(|| panic!("{timeout}"))
        .parse()
        .unwrap();
    assert!(minutes > drill_minutes() + 10.0, "{timeout}");
    assert_gitlab_installs_pinned_firedrill("ci/gameday/gitlab-ci.yml", &doc, job);
    let script: Vec<String> = job["script"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|l| str_of(l, "script").to_string())
        .collect();
    let report_dir = run_drill_call(&script);
    let artifacts = &job["artifacts"];
    assert_eq!(artifacts["when"], "always");
    assert!(
        artifacts["paths"].as_sequence().unwrap().iter().any(|p| p
            .as_str()
            .unwrap()
            .trim_end_matches('/')
            == report_dir)
    );
    // `firedrill run --report-dir DIR` writes DIR/junit.xml.
    assert_eq!(
        str_of(&artifacts["reports"]["junit"], "junit"),
        format!("{report_dir}/junit.xml")
    );
}

#[test]
fn crontab_line_is_valid_cron_with_escaped_percent_signs_and_runs_the_drill_script() {
    let lines = commands_in("ci/gameday/crontab");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    let fields: Vec<&str> = line.splitn(6, ' ').collect();
    assert_cron(&fields[..5].join(" "));
    let command = fields[5];
    assert!(
        command.contains("bash ci/gameday/run-drill.sh"),
        "{command}"
    );
    assert!(command.contains("STAGING_URL=http://"), "{command}");
    // cron turns an unescaped % into a newline.
    let bytes = command.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'%' {
            assert!(i > 0 && bytes[i - 1] == b'\\', "unescaped % in: {command}");
        }
    }
}

// ---------------------------------------------------------------------------
// ci/gameday/run-drill.sh, for real on loopback
// ---------------------------------------------------------------------------

fn run_drill(cwd: &Path, url: Option<&str>, drill: Option<&Path>, report_dir: &str) -> Output {
    run_drill_with(cwd, url, drill, report_dir, &[])
}

/// [`run_drill`] with more variables set (`STAGING_CA_FILE`, ...).
fn run_drill_with(
    cwd: &Path,
    url: Option<&str>,
    drill: Option<&Path>,
    report_dir: &str,
    env: &[(&str, &str)],
) -> Output {
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("ci/gameday/run-drill.sh"))
        .arg(report_dir)
        .current_dir(cwd)
        .env("PATH", path_with_firedrill())
        .env_remove("FIREDRILL")
        .env_remove("FIREDRILL_DRILL")
        .env_remove("STAGING_URL")
        .env_remove("STAGING_CA_FILE")
        .env_remove("STAGING_CLIENT_CERT")
        .env_remove("STAGING_CLIENT_KEY")
        .envs(env.iter().copied())
        .timeout(SCRIPT_TIMEOUT);
    if let Some(url) = url {
        cmd.env("STAGING_URL", url);
    }
    if let Some(drill) = drill {
        cmd.env("FIREDRILL_DRILL", drill);
    }
    cmd.output().unwrap()
}

/// `firedrill target` on a loopback port, stopped on drop.
struct Target {
    child: Child,
    url: String,
}

impl Target {
    fn start() -> Self {
        let mut child = std::process::Command::new(firedrill_bin())
            .args(["target", "--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "info")
            .env("NO_COLOR", "1")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let re = regex::Regex::new(r"127\.0\.0\.1:(\d+)").unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let port = loop {
            let line = lines
                .next()
                .expect("firedrill target exited before it was ready")
                .unwrap();
            if line.contains("fixture target ready") {
                break re.captures(&line).expect("listen address")[1].to_string();
            }
        };
        std::thread::spawn(move || for _ in lines {});
        Target {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn game_day_script_refuses_a_missing_or_malformed_staging_url_with_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = run_drill(root(), None, None, tmp.path().to_str().unwrap());
    assert_eq!(missing.status.code(), Some(2), "{}", describe(&missing));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("set STAGING_URL"));
    for bad in [
        "ftp://staging:21",
        "http://staging",
        "https://staging/api?key=1",
        "http://a|b:80",
        "staging:80",
    ] {
        let out = run_drill(root(), Some(bad), None, tmp.path().to_str().unwrap());
        assert_eq!(out.status.code(), Some(2), "{bad}: {}", describe(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("expected http://host:port"),
            "{bad}: {}",
            describe(&out)
        );
    }
}

#[test]
fn game_day_script_runs_the_real_drill_with_the_url_from_the_environment_and_exits_3_on_a_closed_port()
 {
    // A loopback port nobody listens on: the drill loads (else exit 2) and
    // fails at the start as the README says for an unreachable target (3).
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}");
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("report");
    let out = run_drill(root(), Some(&url), None, report.to_str().unwrap());
    assert_eq!(out.status.code(), Some(3), "{}", describe(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains(&format!("target.url {url}: unreachable at start")),
        "{}",
        describe(&out)
    );
    let copy = std::fs::read_to_string(report.join("drill.yaml")).unwrap();
    assert_eq!(copy, read("experiments/gameday/staging-drill.yaml"));
}

#[test]
fn game_day_script_gives_staging_ca_file_to_an_https_drill_as_target_tls_ca_file() {
    // A CA file that does not exist: the drill stops at loading (exit 2)
    // naming the key the variable became, so the file did reach it.
    let tmp = tempfile::tempdir().unwrap();
    let report = tmp.path().join("report");
    let missing = tmp.path().join("no-such-ca.pem");
    let env = [("STAGING_CA_FILE", missing.to_str().unwrap())];
    let url = "https://127.0.0.1:9/api";
    let out = run_drill_with(root(), Some(url), None, report.to_str().unwrap(), &env);
    assert_eq!(out.status.code(), Some(2), "{}", describe(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("target.tls.ca_file") && stderr.contains("no-such-ca.pem"),
        "{}",
        describe(&out)
    );
}

fn small_drill(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn game_day_script_against_a_loopback_target_holds_and_writes_the_report_folder() {
    let target = Target::start();
    let tmp = tempfile::tempdir().unwrap();
    let drill = small_drill(
        tmp.path(),
        "drill.yaml",
        "name: loopback drill\nduration: 2s\nclock: real\ntarget: { url: ${STAGING_URL} }\n\
         load:\n  - { name: health, request: GET /health, rate: 20/s, timeout: 2s }\n\
         expect:\n  - route health success >= 99%\n\
         halt:\n  - route health success < 50% for 1s\n",
    );
    let out = run_drill(
        tmp.path(),
        Some(&target.url),
        Some(&drill),
        "gameday-report",
    );
    assert_eq!(out.status.code(), Some(0), "{}", describe(&out));
    let dir = tmp.path().join("gameday-report");
    for file in ["drill.yaml", "report.json", "junit.xml", "journal.jsonl"] {
        assert!(dir.join(file).is_file(), "{file}");
    }
    let report = junit(&dir.join("junit.xml"));
    assert_eq!((report.tests, report.failures, report.errors), (1, 0, 0));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["clock"], "real");
    assert!(json["target_hits"].as_u64().unwrap() > 0, "{json}");
}

#[test]
fn game_day_halt_condition_stops_the_drill_with_exit_1_and_a_partial_report() {
    let target = Target::start();
    let tmp = tempfile::tempdir().unwrap();
    // 60 s long, but every answer is a 503: the halt fires after about 1 s.
    let drill = small_drill(
        tmp.path(),
        "drill.yaml",
        "name: halting drill\nduration: 60s\nclock: real\ntarget: { url: ${STAGING_URL} }\n\
         load:\n  - { name: broken, request: GET /status/503, rate: 20/s, timeout: 2s }\n\
         expect:\n  - route broken requests >= 1\n\
         halt:\n  - route broken success < 50% for 1s\n",
    );
    let out = run_drill(
        tmp.path(),
        Some(&target.url),
        Some(&drill),
        "gameday-report",
    );
    assert_eq!(out.status.code(), Some(1), "{}", describe(&out));
    let dir = tmp.path().join("gameday-report");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    assert_eq!(json["ending"]["kind"], "halted", "{json}");
    assert_eq!(
        json["ending"]["condition"],
        "route broken success < 50% for 1s"
    );
    assert!(json["duration_ms"].as_f64().unwrap() < 60_000.0, "{json}");
    let report = junit(&dir.join("junit.xml"));
    assert_eq!(report.errors, 1);
    assert!(
        report.test_suites[0]
            .test_cases
            .iter()
            .any(|c| matches!(&c.status, TestCaseStatus::NonSuccess { message: Some(m), .. } if m.as_str().starts_with("halted: "))),
        "{report:?}"
    );
}

#[test]
fn every_yaml_file_under_ci_parses_and_the_expected_examples_exist() {
    let files = ci_files();
    for expected in [
        "ci/github-actions.yml",
        "ci/gitlab-ci.yml",
        "ci/run-experiments.sh",
        "ci/gameday/github-actions.yml",
        "ci/gameday/gitlab-ci.yml",
        "ci/gameday/crontab",
        "ci/gameday/run-drill.sh",
        "ci/history/github-actions.yml",
        "ci/history/gitlab-ci.yml",
        "ci/k8s/sidecar.yaml",
        "ci/k8s/agent-deployment.yaml",
        "ci/k8s/secret.yaml",
        "ci/container/Containerfile",
        "ci/locust/firedrill_hook.py",
    ] {
        assert!(files.iter().any(|f| f == expected), "{expected}: {files:?}");
    }
    // The Kubernetes examples are manifests, not pipelines (each parses,
    // below, as every YAML file here does).
    let yamls: Vec<&String> = files
        .iter()
        .filter(|f| is_pipeline(f) && !f.starts_with("ci/k8s/"))
        .collect();
    assert_eq!(yamls.len(), 6, "{yamls:?}");
    for file in yamls {
        let doc = yaml(file);
        assert!(doc.as_mapping().is_some_and(|m| !m.is_empty()), "{file}");
    }
}

// ---------------------------------------------------------------------------
// ci/history: scheduled drills kept in a history
// ---------------------------------------------------------------------------

/// The project as the history examples see it: the repository's
/// experiments, and folders of its own for the history and the reports.
fn history_project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(root().join("experiments"), dir.path().join("experiments")).unwrap();
    dir
}

/// Runs `lines` in `project` with the built firedrill on PATH and `envs`;
/// the exit code of each line, in order (every line runs, as `if:
/// always()` steps and `after_script` do).
fn run_lines(project: &Path, lines: &[String], envs: &[(&str, String)]) -> Vec<i32> {
    lines
        .iter()
        .map(|line| {
            let out = std::process::Command::new("bash")
                .arg("-c")
                .arg(format!("set -euo pipefail\n{line}"))
                .current_dir(project)
                .env("PATH", path_with_firedrill())
                .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
                .output()
                .unwrap();
            out.status.code().unwrap_or(-1)
        })
        .collect()
}

#[test]
fn github_history_drill_restores_the_history_saves_it_even_after_a_failure_and_keeps_the_trend() {
    let file = "ci/history/github-actions.yml";
    let wf = yaml(file);
    for entry in wf["on"]["schedule"].as_sequence().expect("on.schedule") {
        assert_cron(str_of(&entry["cron"], "cron"));
    }
    assert!(
        wf.get("concurrency").is_some(),
        "one writer of the history at a time"
    );
    let on_path = assert_github_installs_pinned_firedrill(file, &wf);
    let steps = steps(&wf);
    for step in steps {
        if !uses(step).is_empty() {
            assert_pinned(uses(step));
        }
    }
    let job = wf["jobs"].as_mapping().unwrap().values().next().unwrap();
    let history = str_of(&job["env"]["FIREDRILL_HISTORY"], "env.FIREDRILL_HISTORY");
    let restore = step_index(steps, "restores the history", |s| {
        uses(s).starts_with("actions/cache/restore@")
    });
    let drill = step_index(steps, "runs the drill", |s| {
        run(s).contains("firedrill run ")
    });
    let save = step_index(steps, "saves the history", |s| {
        uses(s).starts_with("actions/cache/save@")
    });
    let trend = step_index(steps, "draws the trend", |s| {
        run(s).contains("firedrill history")
    });
    let upload = step_index(steps, "keeps the trend", |s| {
        uses(s).starts_with("actions/upload-artifact@")
    });
    assert!(on_path < restore && restore < drill && drill < save && save < trend && trend < upload);
    let cached = str_of(&steps[restore]["with"]["path"], "restore path");
    assert!(
        history.starts_with(cached.trim_end_matches('/')),
        "{history} is inside the cached {cached}"
    );
    assert_eq!(steps[restore]["with"]["path"], steps[save]["with"]["path"]);
    assert_eq!(steps[restore]["with"]["key"], steps[save]["with"]["key"]);
    assert!(
        str_of(&steps[restore]["with"]["key"], "key").contains("${{ github.run_id }}"),
        "a new entry per run, the newest restored by prefix"
    );
    for (what, at) in [("saved", save), ("drawn", trend), ("kept", upload)] {
        assert!(
            runs_after_failure(&steps[at]),
            "the history is {what} after a failed drill too"
        );
    }
    let reports = str_of(&steps[upload]["with"]["path"], "path").trim_end_matches('/');

    // The steps for real, three nights in one project folder (the cache
    // restores the folder): each night recorded, the trend drawn.
    let project = history_project();
    let lines = |step: usize| -> Vec<String> {
        run(&steps[step])
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect()
    };
    for night in 1..=3 {
        let mut envs = vec![
            ("FIREDRILL_HISTORY", history.to_string()),
            ("GITHUB_RUN_ID", night.to_string()),
        ];
        let codes = run_lines(project.path(), &lines(drill), &envs);
        assert!(codes.iter().all(|c| *c == 0), "night {night}: {codes:?}");
        envs.push(("HOME", project.path().display().to_string()));
        assert_eq!(run_lines(project.path(), &lines(trend), &envs), vec![0]);
    }
    let page = project.path().join(reports).join("trend.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(
        html.matches("<tr class=\"run\">").count(),
        3,
        "three nights"
    );
    for night in 1..=3 {
        let report = format!("run-{night}/report.html");
        assert!(html.contains(&format!("href=\"{report}\"")), "{report}");
        assert!(
            project.path().join(reports).join(&report).is_file(),
            "{report}"
        );
    }
}

#[test]
fn gitlab_history_drill_reads_the_shared_database_from_a_ci_variable_and_keeps_the_trend() {
    let file = "ci/history/gitlab-ci.yml";
    let doc = yaml(file);
    let job = &doc["firedrill-history"];
    assert_gitlab_installs_pinned_firedrill(file, &doc, job);
    let rule = str_of(&job["rules"][0]["if"], "rules.if");
    assert!(
        rule.contains("$CI_PIPELINE_SOURCE == \"schedule\""),
        "{rule}"
    );
    let vars: Vec<(String, String)> = string_pairs(&doc["variables"])
        .into_iter()
        .chain(string_pairs(&job["variables"]))
        .collect();
    assert!(
        vars.iter().all(|(k, _)| k != "FIREDRILL_HISTORY"),
        "the database URL (with its password) is a masked CI/CD variable, not in the file"
    );
    let header: String = read(file)
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect();
    assert!(header.contains("FIREDRILL_HISTORY") && header.contains("postgres://"));
    assert_eq!(job["artifacts"]["when"], "always");
    let kept = str_of(&job["artifacts"]["paths"][0], "artifacts.paths").trim_end_matches('/');
    let script: Vec<String> = job["script"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|l| str_of(l, "script").to_string())
        .filter(|l| !l.contains("cargo install") && !l.starts_with("export PATH"))
        .collect();
    let after: Vec<String> = job["after_script"]
        .as_sequence()
        .expect("after_script: the trend is drawn after a failed drill too")
        .iter()
        .map(|l| str_of(l, "after_script").to_string())
        .filter(|l| !l.starts_with("export PATH"))
        .collect();
    assert!(
        after
            .iter()
            .any(|l| l.contains("firedrill history") && l.contains("--html"))
    );

    // The script for real, twice, with a SQLite file standing in for the
    // team's database (the URL is the variable's value either way).
    let project = history_project();
    let history = project.path().join("team-history.db").display().to_string();
    for pipeline in 1..=2 {
        let envs = vec![
            ("FIREDRILL_HISTORY", history.clone()),
            ("CI_PIPELINE_ID", pipeline.to_string()),
        ];
        let codes = run_lines(project.path(), &script, &envs);
        assert!(
            codes.iter().all(|c| *c == 0),
            "pipeline {pipeline}: {codes:?}"
        );
        assert_eq!(run_lines(project.path(), &after, &envs), vec![0]);
    }
    let html = std::fs::read_to_string(project.path().join(kept).join("trend.html")).unwrap();
    assert_eq!(html.matches("<tr class=\"run\">").count(), 2);
    assert!(project.path().join(kept).join("junit.xml").is_file());
}
