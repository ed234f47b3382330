//! The commit a checkout is at, as `firedrill --version` shows it:
//! `0123456789ab 2026-12-01` (12 hex digits of the hash, the commit date),
//! `0123456789ab-dirty 2026-12-01` when a file the binary is built from has
//! uncommitted changes, `unknown` outside a git checkout of firedrill itself
//! (a crates.io or tarball build) or without git. Used by the build script
//! and, through `#[path]`, by `tests/version.rs`.
//!
//! Rebuilds stay cheap: the build script reruns only when the checked-out
//! commit moves or a file the binary is built from changes (which
//! recompiles the crate anyway), and then it runs a few quick git commands.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the binary is built from, relative to the package: a change here
/// makes the build dirty.
pub(crate) const BUILT_FROM: &[&str] = &["src", "build", "Cargo.toml", "Cargo.lock"];

/// What [`describe`] found.
#[derive(Debug)]
pub(crate) struct Found {
    /// `0123456789ab 2026-12-01`, with `-dirty` after the hash, or `unknown`.
    pub(crate) commit: String,
    /// Existing files whose change can change `commit`, for
    /// `cargo:rerun-if-changed` (empty outside a checkout).
    pub(crate) watch: Vec<PathBuf>,
}

/// The commit of the checkout whose top is `package_dir`, asking the `git`
/// program given.
pub(crate) fn describe(package_dir: &Path, git: &OsStr) -> Found {
    let found = Git::of_package(package_dir, git).and_then(|g| Some((g.commit()?, g.watch())));
    match found {
        Some((commit, watch)) => Found { commit, watch },
        None => Found {
            commit: "unknown".to_string(),
            watch: Vec::new(),
        },
    }
}

/// A git checkout with the package at its top.
struct Git<'a> {
    program: &'a OsStr,
    dir: PathBuf,
}

impl<'a> Git<'a> {
    /// `None` when git cannot run or the package is not the top of a
    /// checkout: a crate unpacked inside someone else's repository (a
    /// vendored copy, a CARGO_HOME within a project) must not report that
    /// repository's commit.
    fn of_package(package_dir: &Path, program: &'a OsStr) -> Option<Self> {
        let git = Git {
            program,
            dir: package_dir.to_path_buf(),
        };
        let top = PathBuf::from(git.run(&["rev-parse", "--show-toplevel"])?);
        let same = top.canonicalize().ok()? == package_dir.canonicalize().ok()?;
        same.then_some(git)
    }

    /// Output of `git ARGS` in the checkout, trimmed, possibly empty; `None`
    /// when git fails. `--no-optional-locks`: a build must not take the
    /// index lock from a git command the user is running.
    fn output(&self, args: &[&str]) -> Option<String> {
        let out = Command::new(self.program)
            .arg("--no-optional-locks")
            .args(args)
            .current_dir(&self.dir)
            .output()
            .ok()?;
        let text = String::from_utf8(out.stdout).ok()?;
        out.status.success().then(|| text.trim().to_string())
    }

    /// [`Self::output`], `None` when empty too.
    fn run(&self, args: &[&str]) -> Option<String> {
        self.output(args).filter(|text| !text.is_empty())
    }

    /// `0123456789ab 2026-12-01`, `0123456789ab-dirty 2026-12-01`.
    fn commit(&self) -> Option<String> {
        let hash = self.run(&["rev-parse", "--short=12", "HEAD"])?;
        let date = self.run(&["log", "-1", "--format=%cs", "HEAD"])?;
        let mut status = vec!["status", "--porcelain", "--"];
        status.extend(BUILT_FROM);
        let dirty = if self.output(&status)?.is_empty() {
            ""
        } else {
            "-dirty"
        };
        Some(format!("{hash}{dirty} {date}"))
    }

    /// The file behind a path in the git directory, as git resolves it (in
    /// a linked worktree, HEAD is the worktree's and branches are shared).
    fn git_path(&self, name: &str) -> Option<PathBuf> {
        let path = self.run(&["rev-parse", "--git-path", name])?;
        Some(self.dir.join(path))
    }

    /// What the commit and the dirty state follow: HEAD, the branch it
    /// points to, packed refs, HEAD's reflog (which moves with every commit,
    /// also when the branch has no file of its own yet) and the files the
    /// binary is built from. Only existing files: cargo reruns a build
    /// script on every build when a watched file is missing.
    fn watch(&self) -> Vec<PathBuf> {
        let mut watch: Vec<PathBuf> = ["HEAD", "packed-refs", "logs/HEAD"]
            .iter()
            .filter_map(|name| self.git_path(name))
            .collect();
        if let Some(branch) = self.run(&["symbolic-ref", "-q", "HEAD"]) {
            watch.extend(self.git_path(&branch));
        }
        watch.extend(BUILT_FROM.iter().map(|rel| self.dir.join(rel)));
        watch.retain(|path| path.exists());
        watch
    }
}
