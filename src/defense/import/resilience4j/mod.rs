//! resilience4j's Spring Boot configuration (`application.yml` or
//! `.properties`, keys under `resilience4j.`): each instance becomes a
//! route with its circuit breaker, bulkhead, time limiter (the route's
//! timeout) and retry, each resolved through `baseConfig` and
//! `configs.default` as `resilience4j-framework-common` resolves them.

mod breaker;
mod exceptions;
mod others;
#[cfg(test)]
mod tests;
pub(super) mod values;

use std::collections::BTreeMap;

use indexmap::IndexMap;

use super::Imported;
use super::options::Seen;
use super::source::{Entry, Source};
use super::tree::Node;
use crate::schema::SchemaError;
use values::canonical;

/// What a module's reader is given: the file, the levels of one
/// instance, the application's classes, and where keys set aside go.
pub(super) struct Read<'s, 'a, 'p> {
    /// The file.
    pub(super) source: &'s Source,
    /// The instance's levels.
    pub(super) chain: &'s Chain<'a, 'p>,
    /// The application's own exception classes.
    pub(super) user: &'s UserExceptions,
    /// Where the keys the reader sets aside go.
    pub(super) set_aside: &'s mut Vec<SchemaError>,
}

/// The resilience4j modules a Spring Boot file configures, by their
/// canonical key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Module {
    CircuitBreaker,
    Bulkhead,
    TimeLimiter,
    Retry,
}

impl Module {
    const ALL: [Module; 4] = [
        Module::CircuitBreaker,
        Module::Bulkhead,
        Module::TimeLimiter,
        Module::Retry,
    ];

    fn key(self) -> &'static str {
        match self {
            Module::CircuitBreaker => "circuitbreaker",
            Module::Bulkhead => "bulkhead",
            Module::TimeLimiter => "timelimiter",
            Module::Retry => "retry",
        }
    }

    /// The properties of one instance or config of this module, by
    /// canonical name.
    fn properties(self) -> &'static [&'static str] {
        match self {
            Module::CircuitBreaker => breaker::PROPERTIES,
            Module::Bulkhead => others::BULKHEAD_PROPERTIES,
            Module::TimeLimiter => others::TIME_LIMITER_PROPERTIES,
            Module::Retry => others::RETRY_PROPERTIES,
        }
    }
}

/// One instance or config: its properties by canonical name, each with
/// the entries that set it (several for a list).
#[derive(Debug, Default)]
pub(super) struct Props<'a> {
    /// Where it is declared, for messages: `resilience4j.retry.configs.x`.
    pub(super) at: String,
    values: IndexMap<String, Vec<&'a Entry>>,
}

impl<'a> Props<'a> {
    fn first(&self, property: &str) -> Option<&'a Entry> {
        self.values.get(property).and_then(|v| v.first().copied())
    }
}

/// One module's `instances` and `configs`.
#[derive(Debug, Default)]
struct Section<'a> {
    instances: IndexMap<String, Props<'a>>,
    configs: IndexMap<String, Props<'a>>,
}

/// The levels an instance's configuration is built from, the most basic
/// first and the instance last.
pub(super) struct Chain<'a, 'p> {
    pub(super) levels: Vec<&'p Props<'a>>,
}

impl<'a> Chain<'a, '_> {
    /// The entries of the last level that sets `property`.
    pub(super) fn get(&self, property: &str) -> Option<&[&'a Entry]> {
        self.levels
            .iter()
            .rev()
            .find_map(|p| p.values.get(property).map(Vec::as_slice))
    }

    /// The first entry of the last level that sets `property`.
    pub(super) fn one(&self, property: &str) -> Option<&'a Entry> {
        self.get(property).and_then(|e| e.first().copied())
    }
}

/// The application's exception classes, by whole name.
pub(super) type UserExceptions = BTreeMap<String, Vec<Seen>>;

/// No classes of the application's own.
static NO_CLASSES: UserExceptions = BTreeMap::new();

/// Reads every instance of `source` into routes; `user` maps the
/// application's own exception classes.
pub(super) fn import(source: &Source, user: &UserExceptions) -> Result<Imported, Vec<SchemaError>> {
    let mut problems = Vec::new();
    let mut set_aside = Vec::new();
    let sections = group(source, &mut problems);
    let mut names: Vec<String> = Vec::new();
    for module in Module::ALL {
        if let Some(section) = sections.get(&module) {
            for name in section.instances.keys() {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        }
    }
    let mut routes = Vec::new();
    // The levels some instance is built from, by where they are declared.
    let mut used: Vec<String> = Vec::new();
    for name in &names {
        let mut route = Node::map();
        let mut breaker_lists = None;
        for module in Module::ALL {
            let Some(section) = sections.get(&module) else {
                continue;
            };
            let Some(instance) = section.instances.get(name) else {
                continue;
            };
            let levels = match chain(module, section, name, instance) {
                Ok(levels) => levels,
                Err(message) => {
                    let entry = instance.first("baseconfig");
                    problems.push(match entry {
                        Some(e) => source.error(e, message),
                        None => source.whole(message),
                    });
                    continue;
                }
            };
            used.extend(levels.iter().map(|l| l.at.clone()));
            let chain = Chain { levels };
            let mut read = Read {
                source,
                chain: &chain,
                user,
                set_aside: &mut set_aside,
            };
            let result = match module {
                Module::CircuitBreaker => {
                    breaker::map(&mut read, &mut route).map(|l| breaker_lists = Some(l))
                }
                Module::Bulkhead => others::bulkhead(source, &chain, &mut route),
                Module::TimeLimiter => others::time_limiter(source, &chain, &mut route),
                Module::Retry => others::retry(&mut read, breaker_lists.as_ref(), &mut route),
            };
            if let Err(mut found) = result {
                problems.append(&mut found);
            }
        }
        routes.push((name.clone(), route));
    }
    let mut notes: Vec<String> = NOTES.iter().map(|s| s.to_string()).collect();
    notes.extend(unread(source, &sections, &used));
    let imported = Imported {
        routes,
        pools: Vec::new(),
        notes,
        not_drilled: set_aside
            .iter()
            .filter_map(super::not_drilled::NotDrilled::of)
            .collect(),
    };
    super::finish(imported, problems, || {
        source.whole(
            "no resilience4j instance: expected keys such as resilience4j.circuitbreaker.instances.NAME.slidingWindowSize",
        )
    })
}

/// The keys no route reads, each with why: outside `resilience4j.` (not
/// the library's), or in a config no instance is built on.
fn unread(source: &Source, sections: &IndexMap<Module, Section>, used: &[String]) -> Vec<String> {
    let mut notes = Vec::new();
    for entry in &source.entries {
        let declares = entry.path.len() == 4
            && matches!(canonical(&entry.path[2]).as_str(), "instances" | "backends")
            && entry.value.is_empty();
        if declares {
            notes.push(format!(
                "declared: {} (line {}): an instance on its configs alone",
                entry.key(),
                entry.line
            ));
        }
        if entry.path.first().map(|s| canonical(s)).as_deref() != Some("resilience4j") {
            notes.push(format!(
                "not read: {} (line {}): not a resilience4j key",
                entry.key(),
                entry.line
            ));
        }
    }
    for section in sections.values() {
        for config in section.configs.values().filter(|c| !used.contains(&c.at)) {
            for e in config.values.values().flatten() {
                notes.push(format!(
                    "not read: {}: no instance is built on {}",
                    from(e),
                    config.at
                ));
            }
        }
    }
    notes
}

/// What the reader of the output must know about the mapping as a whole.
const NOTES: [&str; 3] = [
    "resilience4j judges exceptions, firedrill HTTP answers: a 4xx or 5xx answer is taken to raise",
    "the exception the usual Spring clients raise (RestTemplate, RestClient, WebClient retrieve(),",
    "Feign: HttpClientErrorException, HttpServerErrorException and the like). See docs/import.md.",
];

/// The entries under `resilience4j.` by module, instance and config;
/// every key that is not a property firedrill reads is a problem, except
/// those that change nothing in how calls are judged (listed in
/// docs/import.md), which are left out here.
fn group<'a>(source: &'a Source, problems: &mut Vec<SchemaError>) -> IndexMap<Module, Section<'a>> {
    let mut sections: IndexMap<Module, Section<'a>> = IndexMap::new();
    for entry in &source.entries {
        let path: Vec<String> = entry.path.iter().map(|s| canonical(s)).collect();
        if path.first().map(String::as_str) != Some("resilience4j") {
            continue;
        }
        let Some(module_key) = path.get(1) else {
            problems.push(source.error(
                entry,
                "expected a module such as resilience4j.circuitbreaker",
            ));
            continue;
        };
        let Some(module) = Module::ALL.into_iter().find(|m| m.key() == module_key) else {
            problems.push(source.error(entry, unknown_module(module_key)));
            continue;
        };
        let section = sections.entry(module).or_default();
        let kind = path.get(2).map(String::as_str);
        let (table, kind_word) = match kind {
            Some("instances" | "backends") => (&mut section.instances, "instances"),
            Some("configs") => (&mut section.configs, "configs"),
            _ => {
                problems.push(source.error(entry, module_level(module, kind)));
                continue;
            }
        };
        let Some(name) = entry.path.get(3) else {
            problems.push(source.error(entry, format!("expected {kind_word}.NAME.PROPERTY")));
            continue;
        };
        let props = table.entry(name.clone()).or_insert_with(|| Props {
            at: format!("resilience4j.{}.{kind_word}.{name}", module.key()),
            values: IndexMap::new(),
        });
        let Some(property) = path.get(4) else {
            continue; // `instances: { NAME: {} }` declares the instance.
        };
        if !module.properties().contains(&property.as_str()) {
            problems.push(source.error(entry, unknown_property(module, &entry.path[4])));
            continue;
        }
        props
            .values
            .entry(property.clone())
            .or_default()
            .push(entry);
    }
    sections
}

fn unknown_module(key: &str) -> String {
    match key {
        "ratelimiter" => "resilience4j's RateLimiter is not modelled: it grants limitForPeriod permits per limitRefreshPeriod, refilled all at once at each period, where firedrill's rate limit is a token bucket refilled continuously; leave it out of the file or replace it with a firedrill rate_limit".to_string(),
        "threadpoolbulkhead" => "resilience4j's thread-pool bulkhead is not modelled: its queue of queueCapacity calls has no firedrill equivalent (firedrill's bulkhead waits by time, max_wait); use the semaphore bulkhead (resilience4j.bulkhead)".to_string(),
        other => format!(
            "unknown resilience4j module `{other}`: expected circuitbreaker, bulkhead, timelimiter or retry"
        ),
    }
}

fn module_level(module: Module, kind: Option<&str>) -> String {
    match kind {
        Some(k) if k.ends_with("aspectorder") => format!(
            "the {} aspect order is not modelled: firedrill's line applies bulkhead, then retry, then the breaker, then the timeout, always (resilience4j's default order puts Retry outside CircuitBreaker outside TimeLimiter, as firedrill does; a changed order is refused)",
            module.key()
        ),
        _ => format!(
            "expected resilience4j.{}.instances.NAME or resilience4j.{}.configs.NAME",
            module.key(),
            module.key()
        ),
    }
}

fn unknown_property(module: Module, written: &str) -> String {
    format!(
        "`{written}` is not a property of a resilience4j {} instance (Spring Boot ignores an unknown key, so it has no effect there either): correct or remove it",
        module.key()
    )
}

/// The levels `instance` (named `name`) is built from, as the module's
/// `Common*ConfigurationProperties` builds it: a `baseConfig` chain; for a
/// circuit breaker without one, the config of the instance's own name if
/// there is one, else `configs.default`; for the other modules,
/// `configs.default` beneath every level that names no base (except
/// `default` itself).
fn chain<'a, 'p>(
    module: Module,
    section: &'p Section<'a>,
    name: &str,
    instance: &'p Props<'a>,
) -> Result<Vec<&'p Props<'a>>, String> {
    let circle = || {
        format!(
            "baseConfig of {}: the chain of baseConfig names goes round in a circle (resilience4j never finishes building it)",
            instance.at
        )
    };
    let default = || {
        section
            .configs
            .get("default")
            .map(|d| ("default".to_string(), d, false))
    };
    let mut levels = vec![instance];
    let (mut name, mut props, mut first) = (name.to_string(), instance, true);
    loop {
        if levels.len() > section.configs.len() + 1 {
            return Err(circle());
        }
        let base = props.first("baseconfig").map(|e| e.value.clone());
        // (the next level's name, its properties, whether the chain ends there)
        let next = match (module, base) {
            (Module::CircuitBreaker, Some(base)) if base == name => {
                return Err(format!(
                    "baseConfig: `{base}` names the instance itself (resilience4j: \"Circular reference detected in instance config\")"
                ));
            }
            (_, Some(base)) => match section.configs.get(&base) {
                Some(found) => Some((base, found, false)),
                None => {
                    let known: Vec<&String> = section.configs.keys().collect();
                    return Err(format!(
                        "baseConfig: no config `{base}` in resilience4j.{}.configs (resilience4j fails with ConfigurationNotFoundException): expected one of {known:?}",
                        module.key()
                    ));
                }
            },
            // A circuit breaker instance without a base takes the config of
            // its own name as it is (its baseConfig is not followed), else
            // `configs.default`.
            (Module::CircuitBreaker, None) if first => match section.configs.get(&name) {
                Some(own) => Some((name.clone(), own, true)),
                None => default(),
            },
            (Module::CircuitBreaker, None) => None,
            (_, None) if name != "default" => default(),
            (_, None) => None,
        };
        let Some((next_name, next_props, last)) = next else {
            break;
        };
        levels.push(next_props);
        if last {
            break;
        }
        (name, props, first) = (next_name, next_props, false);
    }
    levels.reverse();
    Ok(levels)
}

/// `entry`'s place, for a value's comment: `KEY (line N)`.
pub(super) fn from(entry: &Entry) -> String {
    format!("{} (line {})", entry.key(), entry.line)
}

/// The comment of a value the file leaves out.
pub(super) fn default_of(property: &str, value: &str) -> String {
    format!("resilience4j default: {property} {value}")
}

/// Reads one module's values off a chain; every bad value becomes a
/// located problem, and every value read is marked, so the ones that
/// change nothing are listed in the output.
pub(super) struct Reader<'s, 'a, 'p> {
    pub(super) source: &'s Source,
    pub(super) chain: &'s Chain<'a, 'p>,
    pub(super) problems: Vec<SchemaError>,
    /// The application's own exception classes (`import: { exceptions }`).
    pub(super) user: &'s UserExceptions,
    /// Keys set aside as not drilled by the reader itself, the rest of
    /// their list read on (an exception class no one maps).
    pub(super) set_aside: Vec<SchemaError>,
    /// The entries read, by place.
    used: Vec<(usize, usize)>,
}

impl<'s, 'a, 'p> Reader<'s, 'a, 'p> {
    pub(super) fn new(source: &'s Source, chain: &'s Chain<'a, 'p>) -> Self {
        Reader {
            source,
            chain,
            problems: Vec::new(),
            user: &NO_CLASSES,
            set_aside: Vec::new(),
            used: Vec::new(),
        }
    }

    /// A key not drilled that the reader reads past (it stays in the
    /// file, so its list keeps its meaning).
    pub(super) fn set_aside(&mut self, entry: &Entry, message: impl Into<String>) {
        self.mark(entry);
        self.set_aside.push(self.source.error(entry, message));
    }

    /// The value of `property` read by `parse`, with its entry; `None`
    /// when no level sets it or its value is bad (then a problem).
    pub(super) fn value<T>(
        &mut self,
        property: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<(T, &'a Entry)> {
        let entry = self.chain.one(property)?;
        self.mark(entry);
        match parse(&entry.value) {
            Ok(v) => Some((v, entry)),
            Err(message) => {
                self.problems.push(self.source.error(entry, message));
                None
            }
        }
    }

    /// Marks `entry` as read.
    pub(super) fn mark(&mut self, entry: &Entry) {
        self.used.push((entry.line, entry.column));
    }

    /// A problem at `entry`.
    pub(super) fn refuse(&mut self, entry: &Entry, message: impl Into<String>) {
        self.mark(entry);
        self.problems.push(self.source.error(entry, message));
    }

    /// The problems found, if any; else every value of the chain that
    /// was not read and is not overridden by a later level is listed in
    /// `node` as ignored, with why.
    pub(super) fn finish(self, node: &mut Node) -> Result<(), Vec<SchemaError>> {
        if !self.problems.is_empty() {
            return Err(self.problems);
        }
        let levels = &self.chain.levels;
        for (i, level) in levels.iter().enumerate() {
            for (property, entries) in &level.values {
                let read = entries
                    .iter()
                    .any(|e| self.used.contains(&(e.line, e.column)));
                let overridden = levels[i + 1..]
                    .iter()
                    .any(|l| l.values.contains_key(property));
                if property == "baseconfig" {
                    for e in entries {
                        node.note(format!("{}: built on the config it names", from(e)));
                    }
                    continue;
                }
                if read || overridden {
                    // Each entry the values above do not cite is named
                    // here, so no key goes unaccounted.
                    let mut shown = String::new();
                    node.render(0, &mut shown);
                    let winner = levels[i + 1..].iter().rev().find_map(|l| l.first(property));
                    for e in entries.iter().filter(|e| !shown.contains(&from(e))) {
                        node.note(match winner {
                            Some(w) if overridden => {
                                format!("overridden: {} by {}", from(e), from(w))
                            }
                            _ => format!(
                                "read: {} = {}: taken into the values above",
                                from(e),
                                e.value
                            ),
                        });
                    }
                    continue;
                }
                let why = if others::IGNORED.contains(&property.as_str()) {
                    others::ignored_because(property)
                } else {
                    "no effect in resilience4j with the other values of this instance"
                };
                for e in entries {
                    node.note(format!("ignored: {}: {why}", from(e)));
                }
            }
        }
        Ok(())
    }
}
