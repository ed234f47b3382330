//! Standard output for every command that prints (`schema`, `validate`,
//! `run`'s summary, `sweep`'s table, `report`, `demo`, `server`): a reader
//! that has gone (`firedrill schema experiment | head -1`) ends the output
//! quietly, and the command keeps its own exit code. `print!` would panic
//! on the broken pipe (exit 101), so the subcommands use [`out!`] and
//! [`outln!`] instead.

use std::io::Write;

/// Writes `text` on standard output and flushes it. A broken pipe is the
/// reader's choice and says nothing; any other error is said once on
/// stderr, and the command goes on.
pub fn print(text: &str) {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => {
            static SAID: std::sync::Once = std::sync::Once::new();
            SAID.call_once(|| eprintln!("warning: cannot write to standard output: {e}"));
        }
    }
}

/// `print!` that a closed standard output does not panic.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::stdout::print(&format!($($arg)*))
    };
}

/// `println!` that a closed standard output does not panic.
macro_rules! outln {
    () => {
        $crate::cli::stdout::print("\n")
    };
    ($($arg:tt)*) => {
        $crate::cli::stdout::print(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub(crate) use {out, outln};
