//! Every relative link of README.md, BENCHMARKS.md and the chapters under
//! docs/ resolves: the file or folder it names exists, and an anchor
//! (`page.md#a-heading`, `#a-heading`) names a heading of that page, as
//! GitHub makes anchors from headings. Links to other sites are not
//! followed (the suite stays on loopback).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The pages whose links are checked, relative to the root.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![PathBuf::from("README.md"), PathBuf::from("BENCHMARKS.md")];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "md") {
            pages.push(PathBuf::from("docs").join(path.file_name().unwrap()));
        }
    }
    pages.sort();
    pages
}

/// The lines of a page outside its fenced code blocks, with inline code
/// spans blanked, numbered from 1.
fn prose(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut kept = String::new();
        let mut in_code = false;
        for c in line.chars() {
            if c == '`' {
                in_code = !in_code;
            }
            kept.push(if in_code || c == '`' { ' ' } else { c });
        }
        out.push((i + 1, kept));
    }
    out
}

/// The targets of the `[text](target)` links of one line.
fn links(line: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("](") {
        let after = &rest[at + 2..];
        match after.find(')') {
            Some(end) => {
                let target = after[..end].split_whitespace().next().unwrap_or("");
                found.push(target.to_string());
                rest = &after[end..];
            }
            None => break,
        }
    }
    found
}

/// The anchor GitHub gives a heading's text: lowercase, punctuation other
/// than `-` and `_` dropped, spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every anchor of a page: one per heading, a repeated one numbered
/// `-1`, `-2`, ... as GitHub does.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        }
        if fenced {
            continue;
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let base = slug(&line[hashes..]);
            let mut anchor = base.clone();
            let mut n = 0;
            while seen.contains(&anchor) {
                n += 1;
                anchor = format!("{base}-{n}");
            }
            seen.insert(anchor);
        }
    }
    seen
}

/// Why `target`, linked from `page`, does not resolve, if it does not.
fn broken(root: &Path, page: &Path, target: &str) -> Option<String> {
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (file, anchor) = match target.split_once('#') {
        Some((f, a)) => (f, Some(a)),
        None => (target, None),
    };
    let path = if file.is_empty() {
        root.join(page)
    } else {
        root.join(page.parent().unwrap()).join(file)
    };
    if !path.exists() {
        return Some(format!("{} does not exist", path.display()));
    }
    let anchor = anchor?;
    let text = std::fs::read_to_string(&path).ok()?;
    (!anchors(&text).contains(anchor)).then(|| {
        format!(
            "{} has no heading whose anchor is #{anchor}",
            path.display()
        )
    })
}

#[test]
fn every_relative_link_and_anchor_of_the_readme_and_the_docs_resolves() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages(root) {
        let text = std::fs::read_to_string(root.join(&page)).unwrap();
        for (n, line) in prose(&text) {
            for target in links(&line) {
                checked += 1;
                if let Some(why) = broken(root, &page, &target) {
                    wrong.push(format!("{}:{n}: ({target}): {why}", page.display()));
                }
            }
        }
    }
    assert!(
        checked > 30,
        "only {checked} links found: the reader is wrong"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn anchors_are_made_from_headings_as_github_makes_them() {
    let text = "# A tour\n## What `firedrill run` prints\n```\n# not a heading\n```\n## A tour\n";
    let made = anchors(text);
    assert_eq!(
        made,
        BTreeSet::from([
            "a-tour".to_string(),
            "what-firedrill-run-prints".to_string(),
            "a-tour-1".to_string()
        ])
    );
}

#[test]
fn a_missing_file_or_heading_is_reported_and_a_present_one_is_not() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = Path::new("README.md");
    assert!(broken(root, page, "docs/no-such-chapter.md").is_some());
    assert!(broken(root, page, "#no-such-heading").is_some());
    assert!(broken(root, page, "#the-two-commands").is_none());
    assert!(broken(root, page, "docs/reference.md#exit-codes").is_none());
    assert!(broken(root, page, "https://example.com/#x").is_none());
    assert_eq!(links("see [a](b.md#c) and [d](e \"t\")"), ["b.md#c", "e"]);
}
