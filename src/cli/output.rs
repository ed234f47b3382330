//! Output paths, checked before anything runs: a report directory or a
//! report file that cannot be written is a bad argument (exit 2) naming the
//! flag, the path and why, not a failure found once the drill is over. A
//! write that fails after the check (a full disk) is still a failed run
//! (exit 3).

use std::path::Path;

use super::exit::CliError;

/// The name of the file written and removed to learn whether a folder
/// takes new files (permissions alone do not say: root, ACLs, read-only
/// mounts).
const PROBE: &str = ".firedrill-write-check";

/// `flag DIR`: a folder reports go into, created (with its parents) when
/// missing; it must be a folder that takes new files.
pub fn report_dir(flag: &str, dir: &Path) -> Result<(), CliError> {
    let refuse = |why: String| CliError::invalid(why).context(format!("{flag} {}", dir.display()));
    if dir.exists() && !dir.is_dir() {
        return Err(refuse("not a directory".into()));
    }
    std::fs::create_dir_all(dir).map_err(|e| refuse(format!("cannot create it: {e}")))?;
    writable(dir).map_err(|e| refuse(format!("not writable: {e}")))
}

/// `flag FILE`: a report file, created or replaced after the run; its
/// folder must exist and take new files, and the path must not be a
/// folder.
pub fn report_file(flag: &str, file: &Path) -> Result<(), CliError> {
    let refuse = |why: String| CliError::invalid(why).context(format!("{flag} {}", file.display()));
    if file.is_dir() {
        return Err(refuse("is a directory".into()));
    }
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if !parent.is_dir() {
        return Err(refuse(format!(
            "its folder {} does not exist",
            parent.display()
        )));
    }
    if file.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(file)
            .map_err(|e| refuse(format!("not writable: {e}")))?;
        return Ok(());
    }
    writable(parent).map_err(|e| {
        refuse(format!(
            "its folder {} is not writable: {e}",
            parent.display()
        ))
    })
}

/// Whether `dir` takes a new file: one is created and removed.
fn writable(dir: &Path) -> std::io::Result<()> {
    let probe = dir.join(PROBE);
    std::fs::File::create_new(&probe)?;
    std::fs::remove_file(&probe)
}
