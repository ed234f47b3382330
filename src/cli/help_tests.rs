//! `--help` never prints a value taken from the environment: a history URL
//! carries a password, a token is a secret.

use clap::CommandFactory;

use super::Cli;

/// Every flag of `cmd` and of its subcommands read from an environment
/// variable that `--help` would print with its value: `sub --flag (VAR)`.
fn shown_env_values(cmd: &clap::Command, path: &str, shown: &mut Vec<String>) {
    for arg in cmd.get_arguments() {
        if let Some(var) = arg.get_env()
            && !arg.is_hide_env_values_set()
        {
            shown.push(format!("{path} --{} ({var:?})", arg.get_id()));
        }
    }
    for sub in cmd.get_subcommands() {
        shown_env_values(sub, &format!("{path} {}", sub.get_name()), shown);
    }
}

#[test]
fn no_flag_read_from_the_environment_has_its_value_printed_by_help() {
    let mut shown = Vec::new();
    shown_env_values(&Cli::command(), "firedrill", &mut shown);
    assert_eq!(shown, Vec::<String>::new());
}
