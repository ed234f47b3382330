//! Build script: names the commit a binary was built from, for
//! `firedrill --version` (`FIREDRILL_BUILD_VERSION`, see `commit.rs`).

mod commit;

use std::ffi::OsStr;
use std::path::PathBuf;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let package_version = std::env::var("CARGO_PKG_VERSION").unwrap();
    let found = commit::describe(&manifest_dir, OsStr::new("git"));
    println!("cargo:rerun-if-changed=build");
    for path in &found.watch {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    println!(
        "cargo:rustc-env=FIREDRILL_BUILD_VERSION={package_version} ({})",
        found.commit
    );
}
