//! Values as Spring Boot binds them: relaxed names (`slidingWindowSize`,
//! `sliding-window-size`, `sliding_window_size` are one property),
//! durations (`10s`, `500ms`, a bare number of milliseconds, ISO-8601
//! `PT10S`), booleans, numbers and enums.

use crate::clock::Duration;

/// The canonical form of a property or enum name: lowercase, without `-`
/// and `_` (Spring's relaxed binding and its lenient enum conversion).
pub(crate) fn canonical(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A `java.time.Duration` as Spring Boot reads it (`DurationStyle`): a
/// number with an optional unit `ns`, `us`, `ms` (the default), `s`, `m`,
/// `h`, `d`; or ISO-8601 (`PT1M30S`, `PT0.5S`, `P1D`). Negative durations
/// are refused.
pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let bad = || {
        format!(
            "invalid duration `{text}`: expected a Spring Boot duration such as `10s`, `500ms`, `2m`, a number of milliseconds, or ISO-8601 such as `PT10S`"
        )
    };
    if t.starts_with(['P', 'p']) {
        return iso(&t[1..]).ok_or_else(bad);
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: u64 = number.parse().map_err(|_| bad())?;
    let nanos_per: u64 = match unit.to_ascii_lowercase().as_str() {
        "ns" => 1,
        "us" => 1_000,
        "" | "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        _ => return Err(bad()),
    };
    number
        .checked_mul(nanos_per)
        .map(Duration::from_nanos)
        .ok_or_else(bad)
}

/// ISO-8601 after the `P`: `nD` then `T` with `nH`, `nM`, `n.nS`.
fn iso(rest: &str) -> Option<Duration> {
    let (days, time) = match rest.split_once(['T', 't']) {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut total = Duration::ZERO;
    if !days.is_empty() {
        let d: u64 = days.strip_suffix(['D', 'd'])?.parse().ok()?;
        total += Duration::from_secs(d.checked_mul(86_400)?);
    }
    let mut number = String::new();
    for c in time.chars() {
        match c.to_ascii_uppercase() {
            '0'..='9' | '.' => number.push(c),
            unit @ ('H' | 'M' | 'S') => {
                let value: f64 = number.parse().ok()?;
                let secs = match unit {
                    'H' => value * 3600.0,
                    'M' => value * 60.0,
                    _ => value,
                };
                total += Duration::try_from_secs_f64(secs).ok()?;
                number.clear();
            }
            _ => return None,
        }
    }
    (number.is_empty() && (rest.len() > 1 || !days.is_empty())).then_some(total)
}

/// A boolean as Spring converts it: `true`/`false`, `on`/`off`, `yes`/`no`,
/// `1`/`0`, any case.
pub(crate) fn boolean(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "on" | "yes" | "1" => Ok(true),
        "false" | "off" | "no" | "0" => Ok(false),
        _ => Err(format!("invalid boolean `{text}`: expected true or false")),
    }
}

/// A Java `int`.
pub(crate) fn integer(text: &str) -> Result<i64, String> {
    text.trim()
        .parse::<i32>()
        .map(i64::from)
        .map_err(|_| format!("invalid number `{text}`: expected a whole number"))
}

/// A Java `float` or `double`.
pub(crate) fn number(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .ok_or_else(|| format!("invalid number `{text}`: expected a number such as 50 or 1.5"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxed_names_are_one_property() {
        for name in [
            "slidingWindowSize",
            "sliding-window-size",
            "sliding_window_size",
            "SLIDING_WINDOW_SIZE",
        ] {
            assert_eq!(canonical(name), "slidingwindowsize");
        }
    }

    #[test]
    fn a_bare_number_is_milliseconds_and_units_and_iso_are_read() {
        let ms = Duration::from_millis;
        assert_eq!(duration("500").unwrap(), ms(500));
        assert_eq!(duration("10s").unwrap(), ms(10_000));
        assert_eq!(duration("2m").unwrap(), ms(120_000));
        assert_eq!(duration("1500us").unwrap(), Duration::from_micros(1500));
        assert_eq!(duration("7ns").unwrap(), Duration::from_nanos(7));
        assert_eq!(duration("PT10S").unwrap(), ms(10_000));
        assert_eq!(duration("PT0.5S").unwrap(), ms(500));
        assert_eq!(duration("PT1M30S").unwrap(), ms(90_000));
        assert_eq!(duration("P1D").unwrap(), ms(86_400_000));
    }

    #[test]
    fn a_duration_spring_refuses_is_refused() {
        for bad in ["-1s", "10 seconds", "1.5s", "PT", "P", "s", "PT5X"] {
            assert!(duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn booleans_are_read_as_spring_converts_them() {
        assert!(boolean("ON").unwrap());
        assert!(!boolean("no").unwrap());
        assert!(boolean("maybe").is_err());
    }
}
