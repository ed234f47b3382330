//! Which load request a proxy record belongs to: firedrill's own id in
//! its decimal form, and (an agent's proxy) the correlation header a
//! request carried, kept apart so nobody guesses which form a value is in.

/// A correlation header as a request carried it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Carried {
    /// Its name (`x-request-id`, `traceparent`).
    pub header: String,
    /// Its value, untouched.
    pub value: String,
}

/// A request id as `--record` files and the agents' records endpoint write
/// it: the decimal string of `x-firedrill-request-id`. Reading takes that
/// form only; any other text (an older agent's raw trace id) is no id.
pub(super) mod decimal {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(in crate::proxy) fn serialize<S: Serializer>(
        id: &Option<u64>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match id {
            Some(id) => s.serialize_str(&id.to_string()),
            None => s.serialize_none(),
        }
    }

    pub(in crate::proxy) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<u64>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        Ok(text.as_deref().and_then(crate::http::headers::decimal_id))
    }
}

/// The first correlation header a request carries (`x-request-id`, then
/// `traceparent`), as it came.
pub(super) fn carried(headers: &http::HeaderMap) -> Option<Carried> {
    [
        crate::http::headers::X_REQUEST_ID,
        crate::http::headers::TRACEPARENT,
    ]
    .into_iter()
    .find_map(|header| {
        let value = headers.get(header)?;
        Some(Carried {
            header: header.to_string(),
            value: String::from_utf8_lossy(value.as_bytes()).into_owned(),
        })
    })
}
