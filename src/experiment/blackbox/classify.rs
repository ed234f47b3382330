//! Recognising a foreign service's fallback: a load route's `fallback`
//! rule says which responses were served by the service's own fallback
//! (a header, a status, a body match; every given condition must hold).
//!
//! ```yaml
//! load:
//!   - { name: stock, request: GET /stock/sku-1, rate: 20/s, fallback: { header: "x-fallback: cached" } }
//! ```

use serde::{Deserialize, Deserializer};

use crate::schema::deserialize_checked;

/// How to tell a fallback answer of the user's service.
#[derive(Debug, Clone)]
pub struct FallbackRule {
    /// A header that must be present (`name`), or have a value
    /// (`name: value`).
    header: Option<(http::HeaderName, Option<String>)>,
    /// The status the fallback answers with.
    status: Option<u16>,
    /// A pattern the body must match.
    body: Option<regex::Regex>,
}

impl FallbackRule {
    /// The header the rule reads, if any.
    pub fn header_name(&self) -> Option<&http::HeaderName> {
        self.header.as_ref().map(|(name, _)| name)
    }

    /// Whether the rule reads the body.
    pub fn reads_body(&self) -> bool {
        self.body.is_some()
    }

    /// Whether a response with this status, headers and body is a fallback.
    pub fn matches(&self, status: u16, headers: &http::HeaderMap, body: &[u8]) -> bool {
        let header_ok = self.header.as_ref().is_none_or(|(name, value)| {
            headers.get_all(name).iter().any(|v| {
                value
                    .as_deref()
                    .is_none_or(|want| v.to_str().is_ok_and(|got| got.trim() == want))
            })
        });
        let status_ok = self.status.is_none_or(|want| want == status);
        let body_ok = self
            .body
            .as_ref()
            .is_none_or(|re| re.is_match(&String::from_utf8_lossy(body)));
        header_ok && status_ok && body_ok
    }
}

/// `fallback:` as written.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct RawRule {
    /// A header the fallback carries: `x-fallback` (present) or
    /// `x-fallback: cached` (with this value).
    #[serde(default)]
    header: Option<String>,
    /// The status the fallback answers with, e.g. 200 or 203.
    #[serde(default)]
    #[schemars(range(min = 100, max = 599))]
    status: Option<u16>,
    /// A regular expression the fallback's body matches.
    #[serde(default)]
    body: Option<String>,
}

impl TryFrom<RawRule> for FallbackRule {
    type Error = String;

    fn try_from(raw: RawRule) -> Result<Self, String> {
        if raw.header.is_none() && raw.status.is_none() && raw.body.is_none() {
            return Err("give at least one of header, status, body".to_string());
        }
        let header = match raw.header {
            None => None,
            Some(text) => {
                let (name, value) = match text.split_once(':') {
                    Some((n, v)) => (n.trim(), Some(v.trim().to_string())),
                    None => (text.trim(), None),
                };
                let name = http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    format!("header: `{text}`: expected a header name, or `name: value`")
                })?;
                Some((name, value))
            }
        };
        if let Some(status) = raw.status.filter(|s| !(100..=599).contains(s)) {
            return Err(format!(
                "status: {status}: expected an HTTP status, 100 to 599"
            ));
        }
        let body = raw
            .body
            .map(|b| {
                regex::Regex::new(&b).map_err(|e| format!("body: not a regular expression: {e}"))
            })
            .transpose()?;
        Ok(FallbackRule {
            header,
            status: raw.status,
            body,
        })
    }
}

impl<'de> Deserialize<'de> for FallbackRule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        deserialize_checked::<D, RawRule, FallbackRule>(d)
    }
}

crate::schema_via!(FallbackRule, RawRule, "FallbackRule");

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(yaml: &str) -> Result<FallbackRule, String> {
        crate::schema::from_yaml_str::<FallbackRule>("rule.yaml", yaml).map_err(|e| e.to_string())
    }

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut map = http::HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    #[test]
    fn a_header_name_alone_recognises_any_value_and_a_value_only_itself() {
        let any = rule("header: x-fallback").unwrap();
        assert!(any.matches(200, &headers(&[("x-fallback", "cached")]), b""));
        assert!(!any.matches(200, &headers(&[]), b""));
        let cached = rule("header: 'x-fallback: cached'").unwrap();
        assert!(cached.matches(200, &headers(&[("x-fallback", "cached")]), b""));
        assert!(!cached.matches(200, &headers(&[("x-fallback", "empty")]), b""));
    }

    #[test]
    fn every_given_condition_must_hold() {
        let r = rule("{ status: 203, body: '\"fallback\":true' }").unwrap();
        assert!(r.matches(203, &headers(&[]), br#"{"items":[],"fallback":true}"#));
        assert!(!r.matches(200, &headers(&[]), br#"{"items":[],"fallback":true}"#));
        assert!(!r.matches(203, &headers(&[]), br#"{"items":["a"]}"#));
    }

    #[test]
    fn an_empty_rule_a_bad_header_and_a_bad_pattern_are_refused_by_key() {
        assert!(
            rule("{}")
                .unwrap_err()
                .contains("give at least one of header, status, body")
        );
        assert!(
            rule("header: 'bad name'")
                .unwrap_err()
                .contains("header: `bad name`")
        );
        assert!(
            rule("body: '('")
                .unwrap_err()
                .contains("body: not a regular expression")
        );
        assert!(rule("status: 700").unwrap_err().contains("status: 700"));
    }
}
