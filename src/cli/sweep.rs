//! `firedrill sweep`: one experiment over a grid of values (and seeds), in
//! virtual time on every core, one row per point.

use std::fmt::Write;
use std::path::PathBuf;

use super::exit::{CliError, EXIT_INTERRUPTED, EXIT_OK};
use super::stdout::out;
use crate::report::html::sweep_page::write_summary;
use crate::report::sweep::metric::FIGURES;
use crate::report::sweep::{Metric, Plan, Point, Running, Sweep, SweepError, Vary, sweep};

/// The flags of `firedrill sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// The experiment file.
    pub file: PathBuf,
    /// Overrides a field for every point, as `run --set` does:
    /// `--set load.shop.rate=50/s` (the grid's values come after).
    /// Repeatable.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<crate::schema::overrides::Override>,
    /// A dotted path (as `run --set` takes it) and its values:
    /// `--vary defense.routes.stock.breaker.permitted_calls_in_half_open=1,3,5`.
    /// Repeat it to vary several paths (every combination runs).
    #[arg(long, value_name = "PATH=V1,V2,...", required = true)]
    pub vary: Vec<Vary>,
    /// Runs per point, with seeds counting up from the file's seed; the
    /// figures are then the mean with the spread (standard deviation).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub seeds: u32,
    /// `table` (default), `csv` or `json`.
    #[arg(long, value_enum, default_value = "table")]
    pub format: SweepFormat,
    /// Write each run's reports under DIR/NNN-VALUES[/seed-S], and
    /// DIR/sweep.json and DIR/sweep.html (every point on one page).
    #[arg(long)]
    pub report_dir: Option<PathBuf>,
    /// The figure sweep.html charts against the points: success,
    /// fallback, rejected, opens, half-open-to-open or p99. By default the
    /// first expectation's figure if the points differ in it, else the
    /// first figure they differ in.
    #[arg(long)]
    pub chart: Option<Metric>,
    /// Off a terminal (a CI log), print a line of the runs done at most
    /// this often (`0s`: none). On a terminal a progress bar shows
    /// instead.
    #[arg(long, default_value = "10s", value_name = "DURATION")]
    pub progress_interval: crate::schema::units::Dur,
}

/// `--format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SweepFormat {
    /// Aligned columns, a legend of the expectations below.
    Table,
    /// One header row, one row per point.
    Csv,
    /// The whole sweep, every run.
    Json,
}

/// Runs the sweep and prints it. Exit 0 when it ran (pass and fail are
/// data), 2 on bad input, 3 when a run failed, 130 when Ctrl-C or SIGTERM
/// stopped it (the points done are printed and written, marked partial).
pub fn run(args: &SweepArgs) -> Result<u8, CliError> {
    if let Some(dir) = &args.report_dir {
        super::output::report_dir("--report-dir", dir)?;
    }
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let stop = super::runtime::stop_flag()?;
    let plan = Plan {
        file: &args.file,
        sets: &args.set,
        varies: &args.vary,
        seeds: args.seeds,
    };
    let shown = super::progress::Runs::new(args.progress_interval.get());
    let running = Running::default();
    let total = plan.runs();
    let result = std::thread::scope(|scope| {
        let (finished, over) = std::sync::mpsc::channel::<()>();
        let (shown, running) = (&shown, &running);
        scope.spawn(move || shown.beat(&over, total, running));
        let result = sweep(
            &plan,
            threads,
            args.report_dir.as_deref(),
            &stop,
            &|done, total| shown.done(done, total),
            running,
        );
        drop(finished);
        result
    });
    shown.finish();
    let result = result.map_err(|e| match e {
        SweepError::Invalid(_) | SweepError::NotVirtual(_) => CliError::invalid(e),
        SweepError::Run(_) => CliError::runtime(e),
    })?;
    if let Some(dir) = &args.report_dir {
        let chart = args.chart.unwrap_or_else(|| Metric::choose(&result));
        write_summary(dir, &result, chart).map_err(CliError::runtime)?;
    }
    out!(
        "{}",
        match args.format {
            SweepFormat::Table => table(&result),
            SweepFormat::Csv => csv(&result),
            SweepFormat::Json => {
                let mut text = serde_json::to_string_pretty(&result).map_err(CliError::runtime)?;
                text.push('\n');
                text
            }
        }
    );
    Ok(if result.partial {
        EXIT_INTERRUPTED
    } else {
        EXIT_OK
    })
}

/// The column names: the varied paths' last segments, one per expectation,
/// then the figures.
fn header(s: &Sweep) -> Vec<String> {
    let mut h: Vec<String> = s
        .varied
        .iter()
        .map(|p| p.rsplit('.').next().unwrap_or(p).to_string())
        .collect();
    h.extend((1..=s.expectations.len()).map(|i| format!("E{i}")));
    h.extend(
        [
            "opens",
            "half_open->open",
            "success%",
            "fallback%",
            "rejected%",
            "p99ms",
        ]
        .map(String::from),
    );
    h
}

/// One point's cells: its values, pass/FAIL per expectation (k/N with
/// several seeds), and each figure (mean±sd with several seeds).
fn cells(p: &Point, expectations: usize) -> Vec<String> {
    let n = p.runs.len();
    let mut row = p.values.clone();
    for e in 0..expectations {
        let held = p.runs.iter().filter(|r| r.verdicts[e]).count();
        row.push(match (n, held) {
            (1, 1) => "pass".to_string(),
            (1, _) => "FAIL".to_string(),
            _ => format!("{held}/{n}"),
        });
    }
    for figure in FIGURES {
        let (mean, sd) = figure.spread(&p.runs);
        row.push(if n == 1 {
            format!("{}", (mean * 10.0).round() / 10.0)
        } else {
            format!("{mean:.1}±{sd:.1}")
        });
    }
    row
}

fn table(s: &Sweep) -> String {
    let header = header(s);
    let rows: Vec<Vec<String>> = s
        .points
        .iter()
        .map(|p| cells(p, s.expectations.len()))
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|c| {
            rows.iter()
                .map(|r| r[c].chars().count())
                .chain([header[c].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        format!("{}\n", padded.join("  ").trim_end())
    };
    let partial = match s.partial {
        true => ", partial: interrupted, the points done",
        false => "",
    };
    let mut out = format!(
        "sweep of {} ({} points{partial})\n\n",
        s.experiment,
        s.points.len()
    );
    out.push_str(&line(&header));
    for r in &rows {
        out.push_str(&line(r));
    }
    out.push('\n');
    for (i, e) in s.expectations.iter().enumerate() {
        let _ = writeln!(out, "  E{}: {e}", i + 1);
    }
    out
}

fn csv(s: &Sweep) -> String {
    let field = |c: &str| {
        if c.contains([',', '"', '\n']) {
            format!("\"{}\"", c.replace('"', "\"\""))
        } else {
            c.to_string()
        }
    };
    let mut out = String::new();
    let mut header = header(s);
    // The full paths and sentences in the CSV header.
    for (i, p) in s.varied.iter().enumerate() {
        header[i].clone_from(p);
    }
    for (i, e) in s.expectations.iter().enumerate() {
        header[s.varied.len() + i].clone_from(e);
    }
    for row in
        std::iter::once(header).chain(s.points.iter().map(|p| cells(p, s.expectations.len())))
    {
        let fields: Vec<String> = row.iter().map(|c| field(c)).collect();
        let _ = writeln!(out, "{}", fields.join(","));
    }
    out
}
