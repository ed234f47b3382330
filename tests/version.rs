//! `firedrill --version` names the commit the binary was built from: the
//! built binary against this checkout's git, and the build script's commit
//! finder (`build/commit.rs`, included here) against throwaway repositories:
//! a clean and a dirty checkout, a package inside someone else's repository,
//! no repository at all, no git, a branch kept only in packed refs.

#[path = "../build/commit.rs"]
mod commit;

use std::ffi::OsStr;
use std::path::Path;
use std::process::Command;

use assert_cmd::Command as BinCommand;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// `git ARGS` in `dir` with a fixed identity and commit date; its trimmed
/// output. Panics when git fails.
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=test", "-c", "user.email=test@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_COMMITTER_DATE", "2026-11-30T12:00:00+00:00")
        .env("GIT_AUTHOR_DATE", "2026-11-30T12:00:00+00:00")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A repository in `dir` with one commit of a tiny package on branch main.
fn package_repository(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(dir.join("Cargo.toml"), "[package]\n").unwrap();
    std::fs::write(dir.join("README.md"), "readme\n").unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "."]);
    git(dir, &["commit", "-q", "-m", "first"]);
}

fn describe(dir: &Path) -> commit::Found {
    commit::describe(dir, OsStr::new("git"))
}

#[test]
fn version_flag_prints_package_version_and_this_checkouts_commit_hash_dirty_marker_and_date() {
    let top = Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .current_dir(root())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap().trim().to_string());
    // Built from a tarball (no checkout), the binary cannot know its commit.
    let at_top =
        top.is_some_and(|t| Path::new(&t).canonicalize().ok() == root().canonicalize().ok());
    let commit = if at_top {
        let hash = git(root(), &["rev-parse", "--short=12", "HEAD"]);
        let date = git(root(), &["log", "-1", "--format=%cs", "HEAD"]);
        let mut status = vec!["status", "--porcelain", "--"];
        status.extend(commit::BUILT_FROM);
        let dirty = if git(root(), &status).is_empty() {
            ""
        } else {
            "-dirty"
        };
        format!("{hash}{dirty} {date}")
    } else {
        "unknown".to_string()
    };
    let expected = format!("firedrill {} ({commit})\n", env!("CARGO_PKG_VERSION"));
    for flag in ["--version", "-V"] {
        let out = BinCommand::cargo_bin("firedrill")
            .unwrap()
            .arg(flag)
            .output()
            .unwrap();
        assert!(out.status.success(), "{flag}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "{flag}");
    }
}

#[test]
fn commit_of_a_clean_checkout_is_twelve_digits_of_head_and_its_date_and_watches_head_and_branch() {
    let tmp = tempfile::tempdir().unwrap();
    package_repository(tmp.path());
    let head = git(tmp.path(), &["rev-parse", "HEAD"]);
    let found = describe(tmp.path());
    assert_eq!(found.commit, format!("{} 2026-11-30", &head[..12]));
    let git_dir = tmp.path().join(".git");
    for watched in ["HEAD", "logs/HEAD", "refs/heads/main"] {
        assert!(
            found
                .watch
                .iter()
                .any(|p| p.canonicalize().unwrap() == git_dir.join(watched).canonicalize().unwrap()),
            "{watched}: {:?}",
            found.watch
        );
    }
    assert!(found.watch.iter().any(|p| p.ends_with("src")), "{found:?}");

    // A second commit moves the hash.
    std::fs::write(tmp.path().join("src/main.rs"), "fn main() { }\n").unwrap();
    git(tmp.path(), &["commit", "-q", "-am", "second"]);
    let second = git(tmp.path(), &["rev-parse", "--short=12", "HEAD"]);
    assert_ne!(second, head[..12]);
    assert_eq!(describe(tmp.path()).commit, format!("{second} 2026-11-30"));
}

#[test]
fn commit_is_dirty_for_changed_or_new_source_files_but_not_for_other_files() {
    let tmp = tempfile::tempdir().unwrap();
    package_repository(tmp.path());
    let hash = git(tmp.path(), &["rev-parse", "--short=12", "HEAD"]);
    let clean = format!("{hash} 2026-11-30");
    let dirty = format!("{hash}-dirty 2026-11-30");

    std::fs::write(tmp.path().join("README.md"), "changed\n").unwrap();
    std::fs::write(tmp.path().join("notes.txt"), "new\n").unwrap();
    assert_eq!(describe(tmp.path()).commit, clean, "README and notes");

    std::fs::write(tmp.path().join("src/main.rs"), "fn main() { todo!() }\n").unwrap();
    assert_eq!(describe(tmp.path()).commit, dirty, "changed source");
    git(tmp.path(), &["checkout", "-q", "--", "src/main.rs"]);
    assert_eq!(describe(tmp.path()).commit, clean, "reverted");

    std::fs::write(tmp.path().join("src/extra.rs"), "\n").unwrap();
    assert_eq!(describe(tmp.path()).commit, dirty, "new source file");
    std::fs::remove_file(tmp.path().join("src/extra.rs")).unwrap();

    std::fs::write(tmp.path().join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap();
    assert_eq!(describe(tmp.path()).commit, dirty, "changed manifest");
}

#[test]
fn commit_outside_a_repository_or_without_git_is_unknown_and_watches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("src")).unwrap();
    let found = describe(tmp.path());
    assert_eq!(found.commit, "unknown");
    assert!(found.watch.is_empty(), "{found:?}");

    let no_git = commit::describe(root(), OsStr::new("/nonexistent/git"));
    assert_eq!(no_git.commit, "unknown");
    assert!(no_git.watch.is_empty(), "{no_git:?}");
}

#[test]
fn commit_of_a_package_inside_someone_elses_repository_is_unknown() {
    // A vendored copy, or a crate unpacked under a CARGO_HOME kept inside a
    // project: that project's commit is not firedrill's.
    let tmp = tempfile::tempdir().unwrap();
    package_repository(tmp.path());
    let vendored = tmp.path().join("vendor/firedrill");
    std::fs::create_dir_all(vendored.join("src")).unwrap();
    std::fs::write(vendored.join("src/main.rs"), "fn main() {}\n").unwrap();
    git(tmp.path(), &["add", "."]);
    git(tmp.path(), &["commit", "-q", "-m", "vendor"]);
    let found = describe(&vendored);
    assert_eq!(found.commit, "unknown");
    assert!(found.watch.is_empty(), "{found:?}");
}

#[test]
fn commit_of_a_branch_kept_only_in_packed_refs_watches_existing_files_only() {
    // cargo reruns a build script on every build when a watched file is
    // missing; after `git pack-refs` the branch has no file of its own.
    let tmp = tempfile::tempdir().unwrap();
    package_repository(tmp.path());
    git(tmp.path(), &["pack-refs", "--all"]);
    assert!(!tmp.path().join(".git/refs/heads/main").exists());
    let found = describe(tmp.path());
    let hash = git(tmp.path(), &["rev-parse", "--short=12", "HEAD"]);
    assert_eq!(found.commit, format!("{hash} 2026-11-30"));
    assert!(found.watch.iter().all(|p| p.exists()), "{found:?}");
    for watched in ["packed-refs", "logs/HEAD"] {
        assert!(
            found.watch.iter().any(|p| p.ends_with(watched)),
            "{watched}: {found:?}"
        );
    }
}
