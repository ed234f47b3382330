//! `firedrill import` on the realistic configurations in
//! `fixtures/import/`: each prints the documented mapping (the committed
//! `NAME.imported.yaml` next to it, compared byte for byte, the keys it
//! does not drill listed; run with `FIREDRILL_BLESS=1` to rewrite them
//! after a deliberate change), and with `--strict`, for a configuration
//! with keys firedrill does not model (`NAME.refused.txt` next to it),
//! exits 2 with exactly those located errors; its output passes
//! `firedrill validate`, a refused key exits 2 with its place, and an experiment's `import:` lays its routes over the imported
//! instances, with `--set` and `sweep` reaching the imported values.

mod cli_support;

use std::path::{Path, PathBuf};

use cli_support::firedrill;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every source configuration under `fixtures/import/FORMAT/` (not the
/// expected outputs), with its format.
fn sources() -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let dir = root().join("fixtures/import");
    for format in std::fs::read_dir(&dir).unwrap() {
        let format = format.unwrap().path();
        if !format.is_dir() {
            continue;
        }
        let name = format.file_name().unwrap().to_string_lossy().into_owned();
        if name == "real" {
            continue; // below
        }
        for file in std::fs::read_dir(&format).unwrap() {
            let file = file.unwrap().path();
            let shown = file.file_name().unwrap().to_string_lossy().into_owned();
            if !shown.ends_with(".imported.yaml") && !shown.ends_with(".refused.txt") {
                found.push((name.clone(), file));
            }
        }
    }
    found.extend(real_sources());
    found.sort();
    found
}

/// The projects' own published files under `fixtures/import/real/FORMAT/`
/// (README.md there names each source and licence).
fn real_sources() -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let dir = root().join("fixtures/import/real");
    for format in std::fs::read_dir(&dir).unwrap() {
        let format = format.unwrap().path();
        if !format.is_dir() {
            continue;
        }
        let name = format.file_name().unwrap().to_string_lossy().into_owned();
        for file in std::fs::read_dir(&format).unwrap() {
            let file = file.unwrap().path();
            let shown = file.file_name().unwrap().to_string_lossy().into_owned();
            if !shown.ends_with(".imported.yaml") {
                found.push((name.clone(), file));
            }
        }
    }
    found.sort();
    found
}

/// `firedrill import FORMAT FILE` run from the repository root.
fn import(format: &str, file: &Path) -> std::process::Output {
    let relative = file.strip_prefix(root()).unwrap();
    firedrill()
        .current_dir(root())
        .args(["import", format])
        .arg(relative)
        .output()
        .unwrap()
}

#[test]
fn each_fixture_imports_to_its_committed_mapping() {
    let all = sources();
    assert!(all.len() >= 2, "a configuration per format: {all:?}");
    let bless = std::env::var_os("FIREDRILL_BLESS").is_some();
    let mut differ = Vec::new();
    for (format, file) in &all {
        let out = import(format, file);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let refused_file = PathBuf::from(format!("{}.refused.txt", file.display()));
        if refused_file.exists() {
            let relative = file.strip_prefix(root()).unwrap();
            let strict = firedrill()
                .current_dir(root())
                .args(["import", format, "--strict"])
                .arg(relative)
                .output()
                .unwrap();
            assert_eq!(strict.status.code(), Some(2), "{}: refused", file.display());
            let expected = std::fs::read_to_string(&refused_file).unwrap();
            let said = String::from_utf8_lossy(&strict.stderr);
            assert_eq!(said, expected, "{}", refused_file.display());
        }
        assert_eq!(out.status.code(), Some(0), "{}: {stderr}", file.display());
        let printed = String::from_utf8(out.stdout).unwrap();
        let expected_file = PathBuf::from(format!("{}.imported.yaml", file.display()));
        if bless {
            std::fs::write(&expected_file, &printed).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&expected_file).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (FIREDRILL_BLESS=1 writes it)",
                expected_file.display()
            )
        });
        if printed != expected {
            differ.push(format!("{}:\n{printed}", expected_file.display()));
        }
    }
    assert!(
        differ.is_empty(),
        "the import differs from the committed mapping:\n{}",
        differ.join("\n")
    );
}

#[test]
fn firedrill_validate_accepts_every_import() {
    let imported = sources()
        .into_iter()
        .filter(|(_, file)| !PathBuf::from(format!("{}.refused.txt", file.display())).exists());
    for (format, file) in imported {
        let out = import(&format, &file);
        let dir = tempfile::tempdir().unwrap();
        let printed = dir.path().join("imported.yaml");
        std::fs::write(&printed, &out.stdout).unwrap();
        let validated = firedrill().arg("validate").arg(&printed).output().unwrap();
        assert_eq!(
            validated.status.code(),
            Some(0),
            "{}: {}",
            file.display(),
            String::from_utf8_lossy(&validated.stderr)
        );
        let said = String::from_utf8_lossy(&validated.stdout);
        assert!(said.contains("defense line with"), "{said}");
    }
}

#[test]
fn each_real_public_file_imports_with_exit_0_and_strict_refuses_each_that_has_keys_not_drilled() {
    let real = real_sources();
    assert!(real.len() >= 4, "{real:?}");
    let mut with_not_drilled = 0;
    for (format, file) in &real {
        let out = import(format, file);
        assert_eq!(out.status.code(), Some(0), "{}", file.display());
        let printed = String::from_utf8(out.stdout).unwrap();
        if !printed.contains("\n# not drilled (") {
            continue;
        }
        with_not_drilled += 1;
        let relative = file.strip_prefix(root()).unwrap();
        let strict = firedrill()
            .current_dir(root())
            .args(["import", format, "--strict"])
            .arg(relative)
            .output()
            .unwrap();
        assert_eq!(strict.status.code(), Some(2), "{}", file.display());
        let stderr = String::from_utf8_lossy(&strict.stderr);
        // Each key the list names is one of the refusals, at its line.
        for listed in printed.lines().filter_map(|l| l.strip_prefix("#   ")) {
            let (key, rest) = listed.split_once(" (").unwrap();
            let line = rest.split_once(')').unwrap().0.rsplit(':').next().unwrap();
            let at = format!("{}:{line}:", relative.display());
            assert!(
                stderr
                    .lines()
                    .any(|l| l.contains(&at) && l.contains(&format!(" {key}: "))),
                "--strict does not refuse {key} at {at}:\n{stderr}"
            );
        }
    }
    assert!(
        with_not_drilled >= 3,
        "the public files have keys not drilled"
    );
}

#[test]
fn a_run_of_an_imported_file_lists_its_keys_not_drilled_in_report_json_the_summary_and_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(dir.path(), "    stock: { match: /stock/* }");
    let yml = dir.path().join("application.yml");
    let mut text = std::fs::read_to_string(&yml).unwrap();
    text.push_str(
        "resilience4j.ratelimiter:\n  instances:\n    stock:\n      limitForPeriod: 50\n",
    );
    std::fs::write(&yml, &text).unwrap();
    let line = text.lines().count();
    let reports = dir.path().join("reports");
    let out = firedrill()
        .arg("run")
        .arg(&file)
        .arg("--report-dir")
        .arg(&reports)
        .output()
        .unwrap();
    let console = String::from_utf8_lossy(&out.stdout);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{console}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed = format!(
        "resilience4j.ratelimiter.instances.stock.limitForPeriod ({}:{line}): another component: resilience4j's RateLimiter is not modelled",
        yml.display()
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reports.join("report.json")).unwrap())
            .unwrap();
    let in_json = json["not_drilled"].as_array().unwrap();
    assert_eq!(in_json.len(), 1, "{in_json:?}");
    assert!(
        in_json[0].as_str().unwrap().starts_with(&listed),
        "{in_json:?}"
    );
    assert!(
        console.contains("not drilled (1 keys of the imported files"),
        "{console}"
    );
    assert!(console.contains(&listed), "{console}");
    let page = std::fs::read_to_string(reports.join("report.html")).unwrap();
    assert!(page.contains("id=\"not-drilled\""), "the page lists them");
    assert!(page.contains("resilience4j.ratelimiter.instances.stock.limitForPeriod"));
}

#[test]
fn a_refused_key_exits_2_with_the_file_line_column_and_source_key_with_strict() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("application.yml");
    std::fs::write(
        &file,
        "resilience4j:\n  circuitbreaker:\n    instances:\n      stock:\n        enableRandomizedWait: true\n        waitDurationInOpenState: 5s\n",
    )
    .unwrap();
    let lenient = firedrill()
        .args(["import", "resilience4j"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(lenient.status.code(), Some(0), "listed, not refused");
    let printed = String::from_utf8_lossy(&lenient.stdout);
    assert!(printed.contains(&format!("#   resilience4j.circuitbreaker.instances.stock.enableRandomizedWait ({}:5): no model: a randomized wait", file.display())), "{printed}");
    let out = firedrill()
        .args(["import", "resilience4j", "--strict"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "error: {}:5:31: resilience4j.circuitbreaker.instances.stock.enableRandomizedWait: a randomized wait in open (IntervalFunction.ofRandomized) is not modelled",
        file.display()
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "nothing is printed for a refused file"
    );
}

#[test]
fn an_unknown_instance_flag_exits_2_naming_the_instances() {
    let file = root().join("fixtures/import/resilience4j/application.yml");
    let out = firedrill()
        .args(["import", "resilience4j", "--instance", "stocks"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--instance stocks: the file has no such instance: expected one of stock, payments, inventory"), "{stderr}");
}

#[test]
fn an_instance_flag_prints_only_that_route() {
    let file = root().join("fixtures/import/resilience4j/application.yml");
    let out = firedrill()
        .args(["import", "resilience4j", "--instance", "payments"])
        .arg(&file)
        .output()
        .unwrap();
    let printed = String::from_utf8(out.stdout).unwrap();
    assert!(printed.contains("\n  payments:\n"), "{printed}");
    assert!(!printed.contains("\n  stock:\n"), "{printed}");
}

/// An experiment importing `application.yml` from a temporary directory,
/// its `routes:` as given.
fn experiment(dir: &Path, routes: &str) -> PathBuf {
    std::fs::copy(
        root().join("fixtures/import/resilience4j/application.yml"),
        dir.join("application.yml"),
    )
    .unwrap();
    let file = dir.join("drill.yaml");
    std::fs::write(
        &file,
        format!(
            "name: imported\nduration: 20s\ntarget:\n  builtin:\n    routes: [{{ path: /stock/* }}]\ndefense:\n  import: {{ resilience4j: application.yml }}\n  routes:\n{routes}\nload:\n  - {{ name: shop, request: GET /stock/1, rate: 10/s }}\nfaults:\n  - {{ name: down, match: /stock/*, status: {{ code: 503 }}, at: 5s, for: 5s }}\nexpect:\n  - breaker stock opens within 3s of down.start\n"
        ),
    )
    .unwrap();
    file
}

fn run_json(file: &Path, extra: &[&str]) -> serde_json::Value {
    let dir = file.parent().unwrap();
    let json = dir.join("report.json");
    let out = firedrill()
        .arg("run")
        .arg(file)
        .args(["--quiet", "--json"])
        .arg(&json)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn a_route_takes_the_instance_of_its_name_or_of_instance_and_its_own_keys_win() {
    let dir = tempfile::tempdir().unwrap();
    let by_name = experiment(dir.path(), "    stock: { match: /stock/* }");
    let first = run_json(&by_name, &[])["breakers"].clone();
    let by_key = experiment(
        dir.path(),
        "    stock: { match: /stock/*, instance: stock }",
    );
    assert_eq!(
        run_json(&by_key, &[])["breakers"],
        first,
        "instance: stock is the route's own name"
    );
    let other = experiment(
        dir.path(),
        "    stock: { match: /stock/*, instance: payments }",
    );
    assert_ne!(
        run_json(&other, &[])["breakers"],
        first,
        "another instance is another breaker"
    );
    let set = run_json(
        &by_name,
        &["--set", "defense.routes.stock.breaker.minimum_calls=1000"],
    );
    let verdict = &set["verdicts"][0];
    assert_eq!(
        verdict["passed"],
        serde_json::Value::Bool(false),
        "{verdict}"
    );
}

#[test]
fn a_sweep_varies_an_imported_value() {
    let file = root().join("experiments/import_resilience4j_incident.yaml");
    let out = firedrill()
        .arg("sweep")
        .arg(&file)
        .args([
            "--vary",
            "defense.routes.stock.breaker.permitted_calls_in_half_open=1,5",
            "--format",
            "csv",
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = String::from_utf8(out.stdout).unwrap();
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("1,") || l.starts_with("5,"))
        .collect();
    assert_eq!(rows.len(), 2, "{table}");
    assert!(
        rows[0].contains("pass"),
        "the imported 1 flaps as in the incident: {table}"
    );
    assert!(
        rows[1].contains("FAIL") || rows[1].contains("fail"),
        "5 closes: {table}"
    );
}

#[test]
fn an_error_in_a_route_of_an_importing_experiment_is_at_its_place_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(
        dir.path(),
        "    stock:\n      match: /stock/*\n      breaker: { minimum_calls: 0 }",
    );
    let out = firedrill().arg("validate").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!("error: {}:11:", file.display());
    assert!(
        stderr.starts_with(&expected) && stderr.contains("minimum_calls"),
        "{stderr}"
    );
}

#[test]
fn a_refused_key_in_an_imported_file_is_reported_at_its_place_in_that_file_with_strict() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(dir.path(), "    stock: { match: /stock/* }");
    let text = std::fs::read_to_string(&file).unwrap().replace(
        "import: { resilience4j: application.yml }",
        "import: { resilience4j: application.yml, strict: true }",
    );
    std::fs::write(&file, text).unwrap();
    std::fs::write(
        dir.path().join("application.yml"),
        "resilience4j.ratelimiter:\n  instances:\n    stock:\n      limitForPeriod: 50\n",
    )
    .unwrap();
    let out = firedrill().arg("validate").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!(
        "error: {}:4:23: resilience4j.ratelimiter.instances.stock.limitForPeriod: resilience4j's RateLimiter is not modelled",
        dir.path().join("application.yml").display()
    );
    assert!(stderr.starts_with(&expected), "{stderr}");
}

/// An experiment importing `yml` (written to a temporary directory) with
/// `import_extra` next to the file, the dependency answering `code` from
/// 5 s to 10 s; the breaker's transitions in the report.
fn transitions_under(yml: &str, import_extra: &str, code: u16) -> Vec<serde_json::Value> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("application.yml"), yml).unwrap();
    let file = dir.path().join("drill.yaml");
    std::fs::write(
        &file,
        format!(
            "name: imported\nduration: 15s\ntarget:\n  builtin:\n    routes: [{{ path: /stock/* }}]\ndefense:\n  import: {{ resilience4j: application.yml{import_extra} }}\n  routes:\n    stock: {{ match: /stock/* }}\nload:\n  - {{ name: shop, request: GET /stock/1, rate: 10/s }}\nfaults:\n  - {{ name: answer, match: /stock/*, status: {{ code: {code} }}, at: 5s, for: 5s }}\nexpect:\n  - breaker stock never opens\n"
        ),
    )
    .unwrap();
    let report = run_json(&file, &[]);
    report["breakers"][0]["transitions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The resilience4j demo's lists, on an instance `stock`.
const DEMO_LISTS: &str = "resilience4j.circuitbreaker:\n  instances:\n    stock:\n      slidingWindowSize: 10\n      minimumNumberOfCalls: 5\n      recordExceptions:\n        - org.springframework.web.client.HttpServerErrorException\n        - java.util.concurrent.TimeoutException\n        - java.io.IOException\n      ignoreExceptions:\n        - io.github.robwin.exception.BusinessException\n";

/// Issue 44: resilience4j records only the listed exceptions, so a run of
/// 404s (HttpClientErrorException, outside the list) never opens it, and
/// a run of 503s does; before, the list was set aside and the drill
/// counted every 4xx as a failure.
#[test]
fn a_drill_of_imported_record_exceptions_counts_only_what_the_list_records() {
    assert_eq!(
        transitions_under(DEMO_LISTS, "", 404),
        Vec::<serde_json::Value>::new(),
        "404s are successes for resilience4j with these lists"
    );
    assert!(
        !transitions_under(DEMO_LISTS, "", 503).is_empty(),
        "503s are recorded"
    );
}

/// An application class mapped next to the import is the outcome it
/// names: recorded `com.shop.StockException: 404` makes a 404 a failure.
#[test]
fn an_application_exception_mapped_under_import_is_drilled_as_its_status() {
    let yml = DEMO_LISTS.replace(
        "        - java.io.IOException\n",
        "        - java.io.IOException\n        - com.shop.StockException\n",
    );
    assert_eq!(
        transitions_under(&yml, "", 404),
        Vec::<serde_json::Value>::new()
    );
    assert!(
        !transitions_under(&yml, ", exceptions: { com.shop.StockException: 404 }", 404).is_empty(),
        "the mapped 404 is recorded"
    );
}

/// Runs the NGINX guide drill against `conf` (the guide's file, or a copy
/// changed) under `seed`: its exit code and its console output.
fn guide_drill(dir: &Path, conf: &str, seed: u64) -> (Option<i32>, String) {
    let guide = root().join("experiments/import_nginx_guide.yaml");
    let text = std::fs::read_to_string(&guide).unwrap();
    let conf_file = dir.join("nginx.conf");
    std::fs::write(&conf_file, conf).unwrap();
    let text = text.replace(
        "../fixtures/import/real/nginx/http-health-check.conf",
        conf_file.to_str().unwrap(),
    );
    let file = dir.join("guide.yaml");
    std::fs::write(&file, text).unwrap();
    let out = firedrill()
        .arg("run")
        .arg(&file)
        .args(["--seed", &seed.to_string()])
        .output()
        .unwrap();
    let shown = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), shown)
}

#[test]
fn the_nginx_guide_drill_passes_under_every_seed_and_fails_when_backend2_takes_the_pools_values() {
    let dir = tempfile::tempdir().unwrap();
    let guide =
        std::fs::read_to_string(root().join("fixtures/import/real/nginx/http-health-check.conf"))
            .unwrap();
    // The broken line: backend2 without its own max_fails and fail_timeout,
    // as a pool with one value for every server would drill it.
    let one_value = guide.replace(" max_fails=3 fail_timeout=30s", "");
    assert_ne!(one_value, guide);
    for seed in [1, 7, 11, 23] {
        let (code, out) = guide_drill(dir.path(), &guide, seed);
        assert_eq!(code, Some(0), "seed {seed}:\n{out}");
        let (code, out) = guide_drill(dir.path(), &one_value, seed);
        assert_eq!(code, Some(1), "seed {seed}:\n{out}");
        assert!(
            out.lines().any(|l| l.starts_with("  FAIL calls to instance backend2 between 6s and 34s == 0")),
            "seed {seed}:\n{out}"
        );
    }
}

#[test]
fn an_import_no_route_takes_is_refused_at_its_key_naming_the_imported_instances() {
    let dir = tempfile::tempdir().unwrap();
    let file = experiment(dir.path(), "    mine: { match: /other/* }");
    let out = firedrill().arg("run").arg(&file).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:7:", file.display()))
            && stderr.contains("defense.import: no route takes an imported instance, so nothing imported would be drilled")
            && stderr.contains("imported: "),
        "{stderr}"
    );
}

/// The pool of the only pool an import prints, and its not-drilled lines.
fn only_pool(format: &str, file: &str) -> (serde_yaml_ng::Value, Vec<String>) {
    let out = import(format, &root().join(file));
    assert_eq!(out.status.code(), Some(0), "{file}");
    let printed = String::from_utf8(out.stdout).unwrap();
    let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&printed).unwrap();
    let pools = doc["pools"].as_mapping().unwrap();
    assert_eq!(pools.len(), 1, "{printed}");
    let listed = printed
        .lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .map(|l| {
            l.split_once(": no model: ")
                .map_or(l, |(_, why)| why)
                .to_string()
        })
        .collect();
    (pools.values().next().unwrap().clone(), listed)
}

#[test]
fn the_task_rule_and_the_envoy_cluster_istio_generates_from_it_drill_alike() {
    let (rule, rule_listed) =
        only_pool("istio", "fixtures/import/real/istio/destination-rule.yaml");
    let (cluster, cluster_listed) = only_pool(
        "envoy",
        "fixtures/import/real/envoy/istio-httpbin-cluster.yaml",
    );
    assert_eq!(rule["outlier_detection"], cluster["outlier_detection"]);
    assert_eq!(rule["balance"], cluster["balance"]);
    assert_eq!(rule["max_fails"], cluster["max_fails"]);
    // The same two keys are not drilled, for the same reasons: the
    // balancer (LEAST_REQUEST) and the connection limit.
    assert_eq!(rule_listed.len(), 2, "{rule_listed:?}");
    assert_eq!(cluster_listed.len(), 2, "{cluster_listed:?}");
    for c in &cluster_listed {
        assert!(
            rule_listed.iter().any(|r| r.ends_with(c.as_str())),
            "{c}\n{rule_listed:?}"
        );
    }
}
