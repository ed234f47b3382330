//! Importing the defense settings a team already runs: resilience4j
//! (Spring Boot), Sentinel rules, NGINX `upstream` blocks, Envoy clusters,
//! Istio DestinationRules and opossum options, read into firedrill's defense line key by key.
//!
//! Each format's reader turns the file into [`Imported`]: routes (one per
//! instance the file names) and pools, as a [`tree::Node`] whose every
//! value names the source key it came from, or the library default it
//! stands for. `firedrill import` prints it; an experiment's (or a defense
//! file's) `import:` reads the same text back and lays each route of the
//! file over the instance it takes ([`expand`]). A key is mapped exactly,
//! or refused with a located error saying what is not modelled, or listed
//! as ignored with why (docs/import.md has the tables).
//!
//! * [`source`] — a file as located entries; [`properties`] reads Java
//!   `.properties`.
//! * one module per format.
//! * [`tree`] — the printed configuration.
//! * [`expand`] — `import:` in an experiment or a defense file.

mod envoy;
mod envoy_keys;
#[cfg(test)]
mod envoy_tests;
pub mod expand;
mod istio;
#[cfg(test)]
mod istio_tests;
mod nginx;
pub mod not_drilled;
mod opossum;
#[cfg(test)]
mod opossum_tests;
pub mod options;
mod properties;
mod resilience4j;
mod sentinel;
#[cfg(test)]
mod sentinel_tests;
pub mod source;
#[cfg(test)]
pub(crate) mod test_support;
pub mod tree;
#[cfg(test)]
mod walk_tests;

use std::path::Path;

use crate::schema::{self, LoadError, SchemaError};
use not_drilled::{Drop, NotDrilled, Pass};
pub use options::Options;
use source::Source;
use tree::Node;

/// A configuration format firedrill imports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Format {
    /// resilience4j's Spring Boot configuration (`application.yml` or
    /// `application.properties`).
    Resilience4j,
    /// Sentinel degrade and flow rules (JSON).
    Sentinel,
    /// NGINX `upstream` blocks and the locations that proxy to them.
    Nginx,
    /// opossum options (JSON).
    Opossum,
    /// Envoy clusters and the routes that send to them (YAML).
    Envoy,
    /// An Istio `DestinationRule` (YAML), read as the Envoy cluster Istio
    /// generates from it.
    Istio,
}

impl Format {
    /// Every format, in the order the docs list them.
    pub const ALL: [Format; 6] = [
        Format::Resilience4j,
        Format::Sentinel,
        Format::Nginx,
        Format::Opossum,
        Format::Envoy,
        Format::Istio,
    ];

    /// Its name on the command line and under `import:`.
    pub fn key(self) -> &'static str {
        match self {
            Format::Resilience4j => "resilience4j",
            Format::Sentinel => "sentinel",
            Format::Nginx => "nginx",
            Format::Opossum => "opossum",
            Format::Envoy => "envoy",
            Format::Istio => "istio",
        }
    }

    /// The library's name in comments.
    fn library(self) -> &'static str {
        match self {
            Format::Resilience4j => "resilience4j (Spring Boot)",
            Format::Sentinel => "Sentinel rules",
            Format::Nginx => "NGINX",
            Format::Opossum => "opossum",
            Format::Envoy => "Envoy",
            Format::Istio => "Istio DestinationRule",
        }
    }

    /// The format named `key`.
    pub fn from_key(key: &str) -> Option<Format> {
        Format::ALL.into_iter().find(|f| f.key() == key)
    }
}

/// A source configuration read into firedrill's terms.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The routes, one per instance, by instance name, in file order.
    pub routes: Vec<(String, Node)>,
    /// The pools, by name.
    pub pools: Vec<(String, Node)>,
    /// What a reader of the output must know about the mapping as a whole.
    pub notes: Vec<String>,
    /// The keys of the file firedrill does not drill, each with why (set
    /// aside instead of refused, unless `--strict`).
    pub not_drilled: Vec<NotDrilled>,
}

impl Imported {
    /// The names of the instances (routes and pools), for messages.
    pub fn instance_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.routes.iter().map(|(n, _)| n.clone()).collect();
        for (name, _) in &self.pools {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// Keeps only the instances named in `wanted` (all when empty); an
    /// unknown name is an error naming the ones the file has.
    pub fn select(mut self, wanted: &[String]) -> Result<Imported, String> {
        if wanted.is_empty() {
            return Ok(self);
        }
        let known = self.instance_names();
        if let Some(unknown) = wanted.iter().find(|w| !known.contains(w)) {
            return Err(format!(
                "--instance {unknown}: the file has no such instance: expected one of {}",
                known.join(", ")
            ));
        }
        self.routes.retain(|(n, _)| wanted.contains(n));
        let used: Vec<String> = self.routes.iter().filter_map(|(_, r)| pool_of(r)).collect();
        self.pools
            .retain(|(n, _)| wanted.contains(n) || used.contains(n));
        Ok(self)
    }

    /// The defense configuration as YAML, every value commented with its
    /// source; `command` is the command line that made it.
    pub fn render(&self, format: Format, file: &str) -> String {
        let mut out = format!(
            "# firedrill defense line imported from {} configuration {file}\n# (`firedrill import {} {file}`). Each value's comment names the key it came\n# from, or the library's default for a key the file leaves out.\n",
            format.library(),
            format.key()
        );
        for note in &self.notes {
            out.push_str(&format!("# {note}\n"));
        }
        if !self.not_drilled.is_empty() {
            out.push_str(&format!(
                "# not drilled ({} {}: the drill does not cover them; `--strict` refuses them):\n",
                self.not_drilled.len(),
                if self.not_drilled.len() == 1 {
                    "key"
                } else {
                    "keys"
                }
            ));
            for n in &self.not_drilled {
                out.push_str(&format!("#   {}\n", n.line_text()));
            }
        }
        let mut root = Node::map();
        if !self.routes.is_empty() {
            root.set("routes", Node::Map(self.routes.clone()));
        }
        if !self.pools.is_empty() {
            root.set("pools", Node::Map(self.pools.clone()));
        }
        root.render(0, &mut out);
        out
    }
}

/// The import of a format's reader: its routes, pools and notes, unless
/// it found problems (then every one, or `nothing` when it found neither
/// a problem nor a route nor a pool).
fn finish(
    imported: Imported,
    problems: Vec<SchemaError>,
    nothing: impl FnOnce() -> SchemaError,
) -> Result<Imported, Vec<SchemaError>> {
    if !problems.is_empty() {
        return Err(problems);
    }
    if imported.routes.is_empty() && imported.pools.is_empty() {
        return Err(vec![nothing()]);
    }
    Ok(imported)
}

/// The pool a route calls, if the import gave it one.
fn pool_of(route: &Node) -> Option<String> {
    let Node::Map(entries) = route else {
        return None;
    };
    entries.iter().find_map(|(k, v)| match v {
        Node::Leaf { yaml, .. } if k == "pool" => Some(yaml.clone()),
        _ => None,
    })
}

/// Reads `path` in `format`; `instances` keeps only those (all when
/// empty). Every problem the file has is reported, each at its line and
/// column with its key in the source's own terms.
pub fn import_file(
    format: Format,
    path: &Path,
    instances: &[String],
    options: &Options,
) -> Result<Imported, LoadError> {
    let text = schema::read_bounded(path)?;
    let file = path.display().to_string();
    import_text(format, &file, &text, instances, options)
}

/// As [`import_file`], from `text` already read from `file`.
pub fn import_text(
    format: Format,
    file: &str,
    text: &str,
    instances: &[String],
    options: &Options,
) -> Result<Imported, LoadError> {
    let strict = options.strict;
    let drop = match format {
        Format::Sentinel => Drop::Rule,
        Format::Nginx => Drop::NginxText,
        Format::Envoy | Format::Istio => Drop::YamlText,
        Format::Resilience4j | Format::Opossum => Drop::Key,
    };
    // A reader lists the keys it reads past itself (an exception class
    // no one maps): strict refuses them as the others.
    let read = not_drilled::read_whole(file, text, drop, strict, |pass| {
        let imported = read(format, file, pass, options)?;
        match imported.not_drilled.is_empty() || !strict {
            true => Ok(imported),
            false => Err(imported
                .not_drilled
                .iter()
                .map(NotDrilled::refusal)
                .collect()),
        }
    });
    let imported = read.map(|(mut imported, listed)| {
        imported.not_drilled.extend(listed);
        imported.not_drilled.sort();
        imported.not_drilled.dedup();
        imported
    });
    let imported = imported.map_err(|problems| {
        let mut problems = problems;
        problems.sort_by(|a, b| {
            (a.line, a.column, &a.key, &a.message).cmp(&(b.line, b.column, &b.key, &b.message))
        });
        // One message per key and place, however many instances inherit it.
        problems.dedup();
        match schema::all_problems(problems) {
            Err(e) => e,
            Ok(()) => LoadError::Invalid(SchemaError {
                file: file.to_string(),
                line: 1,
                column: 1,
                key: String::new(),
                message: "nothing imported".to_string(),
            }),
        }
    })?;
    imported.select(instances).map_err(|m| {
        LoadError::Invalid(SchemaError {
            file: file.to_string(),
            line: 1,
            column: 1,
            key: String::new(),
            message: m,
        })
    })
}

/// One pass of the reader of `format` over what is left of the file.
fn read(
    format: Format,
    file: &str,
    pass: &Pass,
    options: &Options,
) -> Result<Imported, Vec<SchemaError>> {
    let text = pass.text;
    let left = |source: Result<Source, SchemaError>| {
        source
            .map(|s| not_drilled::without(s, pass.dropped))
            .map_err(|e| vec![e])
    };
    match format {
        Format::Resilience4j => {
            let source = if file.ends_with(".properties") {
                properties::read(file, text)
            } else {
                Source::yaml(file, text, true)
            };
            resilience4j::import(&left(source)?, &options.exceptions)
        }
        Format::Sentinel => {
            // fastjson skips `/* */` and `//` comments: so does the import.
            let text = source::blank_comments(text);
            sentinel::import(&left(Source::json(file, &text))?)
        }
        Format::Nginx => nginx::import(file, text),
        Format::Opossum => opossum::import(&left(Source::json(file, text))?),
        Format::Envoy => envoy::import(file, text),
        Format::Istio => istio::import(file, text),
    }
}
