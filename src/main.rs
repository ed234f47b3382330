//! The `firedrill` binary: parse, run, exit. Everything else is in the
//! library.

use clap::Parser;

/// jemalloc instead of the system's malloc: glibc keeps the memory freed
/// after a burst of connections in the arena of each worker thread, and a
/// long real-clock drill's resident set grew with every burst
/// (BENCHMARKS.md, "Real-clock memory"); jemalloc hands it back to the
/// system after a few seconds.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> std::process::ExitCode {
    let cli = match firedrill::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() {
                firedrill::cli::EXIT_INVALID
            } else {
                0
            };
            let _ = err.print();
            return std::process::ExitCode::from(code);
        }
    };
    firedrill::cli::run(cli)
}
