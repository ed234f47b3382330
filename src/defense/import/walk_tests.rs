//! Every key of every import fixture (`fixtures/import/**`, the projects'
//! own files under `real/` included) is accounted for: the import's output
//! names it in a comment (mapped, ignored, overridden, not read, with its
//! line), or lists it as not drilled. No key is dropped silently.

use std::path::{Path, PathBuf};

use super::source::{Source, blank_comments};
use super::{Format, Options, import_file, nginx, properties};

/// Each source file under `dir`, with its format (the folder it is in).
fn fixtures(dir: &Path, found: &mut Vec<(Format, PathBuf)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            fixtures(&path, found);
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if name.ends_with(".imported.yaml") || name.ends_with(".txt") || name.ends_with(".md") {
            continue;
        }
        let folder = path
            .parent()
            .unwrap()
            .file_name()
            .unwrap()
            .to_string_lossy();
        let format = Format::from_key(&folder).unwrap_or_else(|| panic!("{}", path.display()));
        found.push((format, path));
    }
}

/// A key of the file with its line, and the words that name it in the
/// output (itself, then each enclosing key).
struct Key {
    names: Vec<String>,
    line: usize,
}

fn keys(format: Format, file: &str, text: &str) -> Vec<Key> {
    let from_source = |s: Source| {
        s.entries
            .iter()
            .map(|e| {
                let mut names = Vec::new();
                for n in (2..=e.path.len()).rev() {
                    names.push(super::source::display(&e.path[..n]));
                }
                if e.path.len() == 1 {
                    names.push(e.key());
                }
                Key {
                    names,
                    line: e.line,
                }
            })
            .collect::<Vec<_>>()
    };
    match format {
        Format::Resilience4j if file.ends_with(".properties") => {
            from_source(properties::read(file, text).unwrap())
        }
        Format::Resilience4j | Format::Envoy | Format::Istio => {
            from_source(Source::yaml(file, text, format == Format::Resilience4j).unwrap())
        }
        Format::Sentinel => from_source(Source::json(file, &blank_comments(text)).unwrap()),
        Format::Opossum => from_source(Source::json(file, text).unwrap()),
        Format::Nginx => {
            let mut found = Vec::new();
            walk_nginx(&nginx::parse::parse(file, text).unwrap(), &mut found);
            found
        }
    }
}

fn walk_nginx(directives: &[nginx::parse::Directive], found: &mut Vec<Key>) {
    for d in directives {
        found.push(Key {
            names: vec![d.name.text.clone()],
            line: d.name.line,
        });
        if let Some(block) = &d.block {
            walk_nginx(block, found);
        }
    }
}

/// Whether an output line names `key`: its name (or an enclosing key's)
/// with its line, as a comment writes it (`KEY (line N)`) or the
/// not-drilled list (`KEY (FILE:N)`).
fn accounted(key: &Key, printed: &str, file: &str) -> bool {
    printed.lines().any(|l| {
        key.names.iter().enumerate().any(|(i, name)| {
            let Some(at) = l.find(name.as_str()) else {
                return false;
            };
            let rest = &l[at + name.len()..];
            let own = i == 0;
            rest.starts_with(&format!(" (line {})", key.line))
                || rest.starts_with(&format!(" ({file}:{})", key.line))
                || (own
                    && (l.contains(&format!("(line {})", key.line))
                        || l.contains(&format!(", line {})", key.line))))
                || (!own
                    && (rest.starts_with(" (line ") || rest.starts_with(&format!(" ({file}:"))))
        })
    })
}

#[test]
fn every_key_of_every_import_fixture_is_in_the_output_or_listed_as_not_drilled() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    fixtures(&root.join("fixtures/import"), &mut found);
    assert!(found.len() >= 10, "{found:?}");
    let mut missing = Vec::new();
    for (format, path) in &found {
        let file = path.strip_prefix(&root).unwrap().display().to_string();
        let text = std::fs::read_to_string(path).unwrap();
        let imported = import_file(*format, path, &[], &Options::strict(false))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let printed = imported.render(*format, &path.display().to_string());
        let listed = path.display().to_string();
        for key in keys(*format, &file, &text) {
            if !accounted(&key, &printed, &listed) {
                missing.push(format!("{file}:{}: {}", key.line, key.names[0]));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "{} keys unaccounted:\n{}",
        missing.len(),
        missing.join("\n")
    );
}
