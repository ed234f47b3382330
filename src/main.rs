//! The `firedrill` binary: parse, run, exit. Everything else is in the
//! library.

use clap::Parser;

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
