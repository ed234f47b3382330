//! `firedrill demo`: the fixture target behind an HTTP fault proxy with a
//! sample fault timeline, open-loop load through it, a line per second
//! counted in the words of [`crate::experiment::vocabulary`] (with no
//! defense line, no fallbacks and no rejections: `5xx` and `timeouts` are
//! the errors' kinds).

use std::sync::Arc;

use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use tokio::sync::mpsc;

use super::exit::{CliError, EXIT_OK};
use super::stdout::outln;
use crate::clock::{self, Duration};
use crate::experiment::vocabulary::{ERRORS, REQUESTS, SUCCESS, TIMEOUTS};
use crate::fault::{FaultFile, FaultPlan};
use crate::http::ShutdownSignal;
use crate::net::TcpAcceptor;
use crate::proxy::{BoundProxy, ProxyMode};
use crate::schema::units::Dur;

/// The demo's fault timeline: slow, then failing, then resetting.
pub const DEMO_FAULTS: &str = "\
faults:
  - { name: slow-inventory, match: /inventory/*, latency: { delay: 300ms, jitter: 50ms }, at: 2s, for: 3s }
  - { name: inventory-503, match: /inventory/*, status: { code: 503, body: inventory down }, probability: 50%, at: 5s, for: 3s }
  - { name: inventory-reset, match: /inventory/*, reset: {}, probability: 30%, at: 8s, for: 2s }
";

/// The flags of `firedrill demo`.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// How long to run.
    #[arg(long, default_value = "12s")]
    pub duration: Dur,
    /// Requests per second.
    #[arg(long, default_value_t = 20)]
    pub rate: u32,
    /// Seed of every random decision.
    #[arg(long, default_value_t = 7)]
    pub seed: u64,
}

/// What happened to one request.
#[derive(Debug, Clone, Copy)]
enum Outcome {
    /// A success status (2xx or 3xx) after this long.
    Ok(Duration),
    Status(u16),
    Error,
    Timeout,
}

/// Runs the demo for `duration` at `rate` requests per second.
pub fn demo(args: &DemoArgs) -> Result<u8, CliError> {
    let (duration, rate, seed) = (args.duration.get(), args.rate, args.seed);
    let faults: FaultFile = crate::schema::from_yaml_str("demo faults", DEMO_FAULTS)
        .map_err(|e| CliError::runtime(e).context("built-in demo faults"))?;
    super::runtime::runtime()?.block_on(async move {
        let (stop, shutdown) = ShutdownSignal::new();
        let target = TcpAcceptor::bind("127.0.0.1:0".parse().expect("literal address"))
            .await
            .map_err(CliError::runtime)?;
        let target_addr = target.local_addr();
        let stats = Arc::new(crate::target::TargetStats::default());
        tokio::spawn(crate::target::serve(target, stats.clone(), shutdown.clone()));
        let proxy = BoundProxy::bind("127.0.0.1:0", &target_addr.to_string(), ProxyMode::Http)
            .await
            .map_err(CliError::runtime)?;
        let proxy_addr = proxy.local_addr();
        let plan = Arc::new(FaultPlan::new(faults.faults, seed, clock::now()));
        tokio::spawn(proxy.serve(plan.clone(), shutdown, Duration::from_secs(1)));
        outln!("firedrill demo: target {target_addr}, HTTP fault proxy {proxy_addr}, {rate} req/s for {}s", duration.as_secs());
        outln!("fault timeline:\n{DEMO_FAULTS}");
        outln!(
            "{:>4}  {:>8}  {:>7}  {:>6}  {:>4}  {:>8}  {:>8}  {:>8}  active faults",
            "t", REQUESTS.word, SUCCESS.word, ERRORS.word, "5xx", TIMEOUTS.word, "p50", "p99"
        );
        let client: Client<_, Empty<bytes::Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let (tx, mut rx) = mpsc::unbounded_channel::<(u64, Outcome)>();
        let interval = Duration::from_secs(1) / rate.max(1);
        let start = clock::now();
        let total = (duration.as_secs_f64() * rate as f64) as u64;
        let uri: http::Uri = format!("http://{proxy_addr}/inventory/sku-1").parse().expect("valid uri");
        let mut buckets: Vec<Vec<Outcome>> = vec![Vec::new(); duration.as_secs().max(1) as usize + 2];
        let mut printed = 0usize;
        for i in 0..total {
            clock::sleep_until(start + interval * i as u32).await;
            let (client, tx, uri) = (client.clone(), tx.clone(), uri.clone());
            let second = clock::now().duration_since(start).as_secs();
            tokio::spawn(async move {
                let sent = clock::now();
                let outcome = match tokio::time::timeout(Duration::from_secs(1), async {
                    let resp = client.get(uri).await?;
                    let status = resp.status().as_u16();
                    resp.into_body().collect().await?;
                    Ok::<u16, Box<dyn std::error::Error + Send + Sync>>(status)
                })
                .await
                {
                    Ok(Ok(code)) if (200..400).contains(&code) => Outcome::Ok(clock::now() - sent),
                    Ok(Ok(code)) => Outcome::Status(code),
                    Ok(Err(_)) => Outcome::Error,
                    Err(_) => Outcome::Timeout,
                };
                let _ = tx.send((second, outcome));
            });
            while let Ok((second, outcome)) = rx.try_recv() {
                buckets[second as usize].push(outcome);
            }
            // A second is complete once every request sent in it has had
            // its full 1 s timeout.
            while printed + 2 <= second as usize {
                print_second(printed as u64, &buckets[printed], &plan);
                printed += 1;
            }
        }
        drop(tx);
        while let Some((second, outcome)) = rx.recv().await {
            buckets[second as usize].push(outcome);
        }
        for (second, outcomes) in buckets.iter().enumerate().skip(printed).filter(|(_, o)| !o.is_empty()) {
            print_second(second as u64, outcomes, &plan);
        }
        outln!();
        for (i, fault) in plan.faults().iter().enumerate() {
            outln!("fault {:<16} injected {:>4} times", fault.name, plan.injected(i));
        }
        outln!("requests that reached the target: {}", stats.requests());
        let _ = stop.send(true);
        Ok(EXIT_OK)
    })
}

fn print_second(second: u64, outcomes: &[Outcome], plan: &FaultPlan) {
    let mut latencies: Vec<f64> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Ok(d) => Some(d.as_secs_f64() * 1000.0),
            _ => None,
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let pct = |p: f64| -> String {
        if latencies.is_empty() {
            return "-".to_string();
        }
        format!(
            "{:.1}ms",
            crate::report::summary::percentile(&latencies, p * 100.0)
        )
    };
    let count = |f: fn(&Outcome) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let at = Duration::from_secs(second) + Duration::from_millis(500);
    let faults = plan.faults();
    let active: Vec<&str> = faults
        .iter()
        .filter(|f| f.window.is_active(at))
        .map(|f| f.name.as_str())
        .collect();
    outln!(
        "{:>3}s  {:>8}  {:>7}  {:>6}  {:>4}  {:>8}  {:>8}  {:>8}  {}",
        second,
        outcomes.len(),
        latencies.len(),
        outcomes.len() - latencies.len(),
        count(|o| matches!(o, Outcome::Status(c) if *c >= 500)),
        count(|o| matches!(o, Outcome::Timeout)),
        pct(0.5),
        pct(0.99),
        if active.is_empty() {
            "-".to_string()
        } else {
            active.join(", ")
        }
    );
}
