//! Which HTTP requests a fault applies to: method, path glob and headers.

use std::fmt;

use globset::{Glob, GlobMatcher};
use regex::Regex;
use serde::{Deserialize, Deserializer};

/// A request filter. Empty: matches everything. Written either as a path
/// glob string (`match: /inventory/*`) or as a mapping
/// (`match: { method: GET, path: /inventory/*, headers: { x-tenant: beta } }`).
#[derive(Clone, Default)]
pub struct HttpMatch {
    methods: Vec<http::Method>,
    path: Option<(String, GlobMatcher)>,
    headers: Vec<(http::HeaderName, HeaderTest)>,
}

#[derive(Clone)]
enum HeaderTest {
    Equals(String),
    Regex(Regex),
}

impl fmt::Debug for HttpMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpMatch")
            .field("methods", &self.methods)
            .field("path", &self.path.as_ref().map(|p| &p.0))
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|h| h.0.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl HttpMatch {
    /// Whether a request with this method, path and headers matches.
    pub fn matches(&self, method: &http::Method, path: &str, headers: &http::HeaderMap) -> bool {
        if !self.methods.is_empty() && !self.methods.contains(method) {
            return false;
        }
        if let Some((_, glob)) = &self.path
            && !glob.is_match(path)
        {
            return false;
        }
        self.headers.iter().all(|(name, test)| {
            headers.get_all(name).iter().any(|value| {
                let Ok(value) = value.to_str() else {
                    return false;
                };
                match test {
                    HeaderTest::Equals(want) => value == want,
                    HeaderTest::Regex(re) => re.is_match(value),
                }
            })
        })
    }

    /// The path glob as written, if any.
    pub fn path_glob(&self) -> Option<&str> {
        self.path.as_ref().map(|p| p.0.as_str())
    }

    /// Whether this matcher lets everything through.
    pub fn is_empty(&self) -> bool {
        self.methods.is_empty() && self.path.is_none() && self.headers.is_empty()
    }

    /// A matcher on a path glob.
    pub fn path(glob: &str) -> Result<HttpMatch, String> {
        Ok(HttpMatch {
            path: Some(compile_glob(glob)?),
            ..HttpMatch::default()
        })
    }
}

fn compile_glob(glob: &str) -> Result<(String, GlobMatcher), String> {
    if !glob.starts_with('/') && glob != "*" && !glob.starts_with('*') {
        return Err(format!(
            "invalid path glob `{glob}`: a path starts with `/`, e.g. `/inventory/*`"
        ));
    }
    let compiled =
        Glob::new(glob).map_err(|e| format!("invalid path glob `{glob}`: {}", e.kind()))?;
    Ok((glob.to_string(), compiled.compile_matcher()))
}

/// The one-line reason of a regex error (`regex` writes syntax errors over
/// several lines, with a caret under the problem).
pub(crate) fn regex_problem(error: &regex::Error) -> String {
    let text = error.to_string();
    let last = text.lines().rev().find(|l| !l.trim().is_empty());
    let last = last.unwrap_or(&text).trim();
    last.strip_prefix("error: ").unwrap_or(last).to_string()
}

/// One HTTP method or a list of them.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum OneOrMany {
    /// One method, e.g. `GET`.
    One(String),
    /// Any of these methods.
    Many(Vec<String>),
}

/// How a header's value is tested.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
enum RawHeaderTest {
    /// Equal to this text.
    Equals(String),
    /// Matching a regular expression.
    Regex {
        /// The expression (Rust `regex` syntax), e.g. `^curl/`.
        regex: String,
    },
}

/// A request filter as a mapping; every given part must match.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    /// HTTP method(s), e.g. `GET` or `[GET, HEAD]` (default: any).
    #[serde(default)]
    method: Option<OneOrMany>,
    /// Path glob starting with `/`, e.g. `/inventory/*` (default: any).
    #[serde(default)]
    #[schemars(regex(pattern = r"^[/*]"))]
    path: Option<String>,
    /// Header name to required value, or to `{ regex: ... }`.
    #[serde(default)]
    headers: indexmap::IndexMap<String, RawHeaderTest>,
}

/// A path glob string or a mapping of method, path and headers.
impl schemars::JsonSchema for HttpMatch {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HttpMatch".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mapping = generator.subschema_for::<RawMatch>();
        schemars::json_schema!({
            "description": "Which HTTP requests: a path glob (`/inventory/*`), or a mapping of method, path and headers.",
            "anyOf": [
                { "type": "string", "pattern": "^[/*]", "examples": ["/inventory/*"] },
                mapping,
            ],
        })
    }
}

impl TryFrom<RawMatch> for HttpMatch {
    type Error = String;

    fn try_from(raw: RawMatch) -> Result<Self, String> {
        let methods = match raw.method {
            None => Vec::new(),
            Some(OneOrMany::One(m)) => vec![m],
            Some(OneOrMany::Many(ms)) => ms,
        };
        let methods = methods
            .iter()
            .map(|m| {
                let upper = m.to_ascii_uppercase();
                http::Method::from_bytes(upper.as_bytes())
                    .map_err(|_| format!("method: invalid HTTP method `{m}`"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let path = raw
            .path
            .as_deref()
            .map(compile_glob)
            .transpose()
            .map_err(|e| format!("path: {e}"))?;
        let headers = raw
            .headers
            .into_iter()
            .map(|(name, test)| {
                let header = http::HeaderName::from_bytes(name.as_bytes())
                    .map_err(|_| format!("headers: invalid header name `{name}`"))?;
                let test = match test {
                    RawHeaderTest::Equals(v) => HeaderTest::Equals(v),
                    RawHeaderTest::Regex { regex } => {
                        HeaderTest::Regex(Regex::new(&regex).map_err(|e| {
                            format!(
                                "headers.{name}.regex: invalid regex `{regex}`: {}",
                                regex_problem(&e)
                            )
                        })?)
                    }
                };
                Ok((header, test))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(HttpMatch {
            methods,
            path,
            headers,
        })
    }
}

impl<'de> Deserialize<'de> for HttpMatch {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = HttpMatch;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a path glob such as `/inventory/*` or a mapping with method, path, headers",
                )
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<HttpMatch, E> {
                HttpMatch::path(v).map_err(E::custom)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<HttpMatch, A::Error> {
                let raw = RawMatch::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                HttpMatch::try_from(raw).map_err(serde::de::Error::custom)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn path_glob_matches_below_the_prefix_only() {
        let m = HttpMatch::path("/inventory/*").unwrap();
        let none = headers(&[]);
        assert!(m.matches(&http::Method::GET, "/inventory/sku-1", &none));
        assert!(!m.matches(&http::Method::GET, "/local/ping", &none));
    }

    #[test]
    fn method_and_header_conditions_all_have_to_hold() {
        let raw = RawMatch {
            method: Some(OneOrMany::One("get".into())),
            path: None,
            headers: [
                ("x-tenant".to_string(), RawHeaderTest::Equals("beta".into())),
                (
                    "user-agent".to_string(),
                    RawHeaderTest::Regex {
                        regex: "^curl/".into(),
                    },
                ),
            ]
            .into_iter()
            .collect(),
        };
        let m = HttpMatch::try_from(raw).unwrap();
        let good = headers(&[("x-tenant", "beta"), ("user-agent", "curl/8")]);
        let wrong_agent = headers(&[("x-tenant", "beta"), ("user-agent", "wget")]);
        assert!(m.matches(&http::Method::GET, "/", &good));
        assert!(!m.matches(&http::Method::POST, "/", &good));
        assert!(!m.matches(&http::Method::GET, "/", &wrong_agent));
    }
}
