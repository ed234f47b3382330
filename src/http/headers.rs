//! The `x-firedrill-*` headers: how the load generator, the defense line
//! and the fault proxy tell each other what happened to a request.

/// The load generator's sequence number of a request, carried through the
/// defense line and the fault proxy so the report can join them.
pub const REQUEST_ID_HEADER: &str = "x-firedrill-request-id";
/// The load request id in `x-firedrill-request-id`: firedrill writes it as
/// a plain decimal number, so that is the one form read (no sign, no
/// leading zero, no spaces); any other text carries no id.
pub fn load_request_id(headers: &http::HeaderMap) -> Option<u64> {
    decimal_id(headers.get(REQUEST_ID_HEADER)?.to_str().ok()?)
}

/// `text` as firedrill writes a request id: `u64`'s decimal form and
/// nothing else (`"007"` and `"+7"` are not ids).
pub fn decimal_id(text: &str) -> Option<u64> {
    let canonical =
        text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// Header naming the fallback that answered: `stale`, `static`, `backup`.
pub const FALLBACK_HEADER: &str = "x-firedrill-fallback";
/// Header naming why the defense answered instead of the dependency.
pub const REASON_HEADER: &str = "x-firedrill-reason";
/// Header naming the fault that answered instead of the dependency; only
/// a configured fault sets it.
pub const FAULT_HEADER: &str = "x-firedrill-fault";
/// Header naming why the fault proxy answered itself though no fault
/// decided it (`upstream-unreachable`, `upstream-error`): the proxy's own
/// 502, never to be mistaken for an injected fault.
pub const ERROR_HEADER: &str = "x-firedrill-error";

/// Which fallback served a response.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum FallbackKind {
    /// The last good response for the same request.
    Stale,
    /// The backup upstream.
    Backup,
    /// The configured static response.
    Static,
    /// The user's own service's fallback, recognised by the load route's
    /// `fallback` rule (header, status, body).
    Service,
}

impl FallbackKind {
    /// Every kind, in the order expectations list them.
    pub const ALL: [FallbackKind; 4] = [
        FallbackKind::Stale,
        FallbackKind::Static,
        FallbackKind::Backup,
        FallbackKind::Service,
    ];

    /// The kind a `x-firedrill-fallback` header value names.
    pub fn from_header(value: &str) -> Option<FallbackKind> {
        match value {
            "stale" => Some(FallbackKind::Stale),
            "backup" => Some(FallbackKind::Backup),
            "static" => Some(FallbackKind::Static),
            "service" => Some(FallbackKind::Service),
            _ => None,
        }
    }

    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            FallbackKind::Stale => "stale",
            FallbackKind::Backup => "backup",
            FallbackKind::Static => "static",
            FallbackKind::Service => "service",
        }
    }
}

/// The correlation header most services log and pass on.
pub const X_REQUEST_ID: &str = "x-request-id";
/// The W3C Trace Context header (`00-<trace id>-<parent id>-<flags>`).
pub const TRACEPARENT: &str = "traceparent";

/// The top bit of the low half of a trace id (and of the parent id): set,
/// so that neither is ever all zeros (W3C calls that invalid) whatever the
/// seed and request id.
const MARK: u64 = 1 << 63;

/// How a load request to a user's service carries its id, so that a call
/// the service makes to a dependency can be paired with the request that
/// caused it when the service passes the header on.
///
/// Every header named carries the run's trace id of the request,
/// `<seed: 16 hex><2^63 | request id: 16 hex>`: `traceparent` as
/// `00-<trace id>-<2^63 | request id: 16 hex>-01`, any other header as the
/// 32 hex digits alone. Deterministic: the same seed gives the same ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Correlation {
    /// The headers set on each request and read at the dependency proxy.
    pub headers: Vec<http::HeaderName>,
    /// The run's seed, the trace id's high half.
    pub seed: u64,
}

impl Correlation {
    /// The value of `header` for request `id`.
    pub fn value(&self, header: &http::HeaderName, id: u64) -> http::HeaderValue {
        let low = MARK | id;
        let trace = format!("{:016x}{low:016x}", self.seed);
        let text = if header.as_str() == TRACEPARENT {
            format!("00-{trace}-{low:016x}-01")
        } else {
            trace
        };
        http::HeaderValue::from_str(&text).expect("hex digits and dashes")
    }

    /// The load request id carried by the first of the headers that holds
    /// one of this run's ids (in either form, whatever its name).
    pub fn request_id(&self, headers: &http::HeaderMap) -> Option<u64> {
        self.headers
            .iter()
            .filter_map(|h| headers.get(h)?.to_str().ok())
            .find_map(|v| self.parse(v))
    }

    /// The request id in `value`: a `traceparent` or a bare trace id of
    /// this run's seed.
    pub fn parse(&self, value: &str) -> Option<u64> {
        let value = value.trim();
        let trace = match value.split('-').collect::<Vec<_>>()[..] {
            [version, trace, parent, flags]
                if version.len() == 2 && parent.len() == 16 && flags.len() == 2 =>
            {
                trace
            }
            _ => value,
        };
        if trace.len() != 32 || !trace.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let (seed, low) = trace.split_at(16);
        let seed = u64::from_str_radix(seed, 16).ok()?;
        let low = u64::from_str_radix(low, 16).ok()?;
        (seed == self.seed && low & MARK != 0).then_some(low & !MARK)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn both(seed: u64) -> Correlation {
        Correlation {
            headers: vec![
                http::HeaderName::from_static(X_REQUEST_ID),
                http::HeaderName::from_static(TRACEPARENT),
            ],
            seed,
        }
    }

    #[test]
    fn the_ids_encode_the_seed_and_the_request_and_are_never_all_zeros() {
        let c = both(0);
        let [rid, tp] = [&c.headers[0], &c.headers[1]].map(|h| c.value(h, 0));
        assert_eq!(rid, "00000000000000008000000000000000");
        assert_eq!(
            tp,
            "00-00000000000000008000000000000000-8000000000000000-01"
        );
        let c = both(11);
        assert_eq!(
            c.value(&c.headers[1], 41),
            "00-000000000000000b8000000000000029-8000000000000029-01"
        );
    }

    #[test]
    fn a_request_id_is_read_back_from_either_header_in_either_form() {
        let c = both(11);
        for (name, id) in [(X_REQUEST_ID, 7), (TRACEPARENT, 9)] {
            for form in [&c.headers[0], &c.headers[1]] {
                let mut headers = http::HeaderMap::new();
                headers.insert(name, c.value(form, id));
                assert_eq!(c.request_id(&headers), Some(id), "{name} as {form}");
            }
        }
    }

    #[test]
    fn a_request_id_header_is_read_only_in_the_decimal_form_firedrill_writes() {
        assert_eq!(decimal_id("0"), Some(0));
        assert_eq!(decimal_id("41"), Some(41));
        assert_eq!(decimal_id("18446744073709551615"), Some(u64::MAX));
        // A trace id of seed 7 made only of digits is not a decimal id.
        for text in [
            "00000000000000078000000000000029",
            "007",
            "+7",
            " 7",
            "7a",
            "",
            "18446744073709551616",
        ] {
            assert_eq!(decimal_id(text), None, "{text:?}");
        }
        let mut headers = http::HeaderMap::new();
        headers.insert(REQUEST_ID_HEADER, http::HeaderValue::from_static("12"));
        assert_eq!(load_request_id(&headers), Some(12));
    }

    #[test]
    fn a_trace_id_made_only_of_digits_is_read_as_the_trace_it_is() {
        // Seed 7 and request 41: every hex digit of the trace is a decimal
        // digit, which a decimal reading would take for 78000000000000029.
        let c = both(7);
        let trace = c.value(&c.headers[0], 41);
        assert_eq!(trace, "00000000000000078000000000000029");
        assert_eq!(c.parse(trace.to_str().unwrap()), Some(41));
    }

    #[test]
    fn another_runs_seed_a_foreign_id_or_an_unnamed_header_pairs_nothing() {
        let c = both(11);
        let mut headers = http::HeaderMap::new();
        headers.insert(X_REQUEST_ID, both(12).value(&c.headers[0], 7));
        headers.insert(
            TRACEPARENT,
            http::HeaderValue::from_static(
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ),
        );
        assert_eq!(c.request_id(&headers), None);
        headers.insert("x-correlation-id", c.value(&c.headers[0], 7));
        assert_eq!(c.request_id(&headers), None, "not a configured header");
        let unmarked = http::HeaderValue::from_static("000000000000000b0000000000000007");
        headers.insert(X_REQUEST_ID, unmarked);
        assert_eq!(c.request_id(&headers), None, "not one of firedrill's");
    }
}
