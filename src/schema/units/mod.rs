//! The value types of the YAML formats: durations (`150ms`, `3s`, `1m`),
//! percentages (`30%`), byte sizes (`64KiB`) and rates (`100KB/s`); the
//! status and error codes faults answer with are in [`codes`].
//!
//! Each one validates while it is read, so a bad value is reported at its own
//! line and column.

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};

use crate::clock::Duration;

mod codes;

pub use self::codes::{
    ErrorStatus, GRPC_STATUS_NAMES, GrpcError, H2_ERROR_NAMES, H2Error, grpc_status_code,
    grpc_status_name,
};

/// A duration written as a number with a unit: `500us`, `150ms`, `3s`, `1m`,
/// `2h`, or combinations such as `1m30s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Dur(pub Duration);

impl Dur {
    /// The wrapped duration.
    pub fn get(self) -> Duration {
        self.0
    }
}

/// The longest duration that can be written, in seconds (about 31 years).
const MAX_SECONDS: f64 = 1e9;

impl FromStr for Dur {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let expected = || {
            format!(
                "invalid duration `{text}`: expected a number with a unit (us, ms, s, m, h), e.g. `150ms`, `3s`, `1m`"
            )
        };
        let s = text.trim();
        if s.is_empty() {
            return Err(expected());
        }
        if s == "0" {
            return Ok(Dur(Duration::ZERO));
        }
        if s.starts_with('-') {
            return Err(format!(
                "invalid duration `{text}`: a duration cannot be negative"
            ));
        }
        let mut total = Duration::ZERO;
        let mut rest = s;
        while !rest.is_empty() {
            let digits = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                .ok_or_else(expected)?;
            if digits == 0 {
                return Err(expected());
            }
            let number: f64 = rest[..digits].parse().map_err(|_| expected())?;
            rest = &rest[digits..];
            let unit_len = rest
                .find(|c: char| c.is_ascii_digit() || c == '.')
                .unwrap_or(rest.len());
            let scale = match &rest[..unit_len] {
                "us" | "µs" => 1e-6,
                "ms" => 1e-3,
                "s" => 1.0,
                "m" => 60.0,
                "h" => 3600.0,
                _ => return Err(expected()),
            };
            rest = &rest[unit_len..];
            let secs = number * scale;
            if !secs.is_finite() || secs > MAX_SECONDS {
                return Err(format!(
                    "invalid duration `{text}`: too large: expected at most {MAX_SECONDS}s"
                ));
            }
            if secs > 0.0 && secs < 1e-6 {
                return Err(format!(
                    "invalid duration `{text}`: below 1us, the smallest step a duration keeps: expected 0 or at least 1us"
                ));
            }
            total += Duration::from_secs_f64(secs);
        }
        Ok(Dur(total))
    }
}

impl fmt::Display for Dur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let micros = self.0.as_micros();
        if micros == 0 {
            write!(f, "0s")
        } else if micros.is_multiple_of(1_000_000) {
            write!(f, "{}s", micros / 1_000_000)
        } else if micros.is_multiple_of(1_000) {
            write!(f, "{}ms", micros / 1_000)
        } else {
            write!(f, "{micros}us")
        }
    }
}

/// A share from 0 % to 100 %, written `30%` (the `%` is required).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Default)]
pub struct Percent(f64);

impl Percent {
    /// 100 %.
    pub const ALL: Percent = Percent(100.0);

    /// A percentage; `None` outside 0..=100.
    pub fn new(percent: f64) -> Option<Percent> {
        (0.0..=100.0).contains(&percent).then_some(Percent(percent))
    }

    /// The share as a fraction from 0.0 to 1.0.
    pub fn fraction(self) -> f64 {
        self.0 / 100.0
    }

    /// The share in percent, 0.0 to 100.0.
    pub fn percent(self) -> f64 {
        self.0
    }
}

/// Why `text`, a `what` with a space inside (`50 %`, `64 KB`), is refused
/// when it `reads` without the space: a value is its number and unit
/// written together, as a duration always was (`10 s` is no duration).
/// `None` without an inner space, or when even the joined form is not a
/// value (its own error says why).
fn inner_space(text: &str, what: &str, reads: impl Fn(&str) -> bool) -> Option<String> {
    let s = text.trim();
    if !s.contains(char::is_whitespace) {
        return None;
    }
    let joined: String = s.split_whitespace().collect();
    reads(&joined).then(|| {
        format!(
            "invalid {what} `{text}`: a space inside it: expected the number and its unit together, `{joined}`"
        )
    })
}

/// A percentage must say `%`: a bare `0.5` reads as 0.5 % to some and as
/// 50 % to others (Sentinel's ratios), so it is refused with both readings.
fn parse_percent(text: &str) -> Result<Percent, String> {
    if let Some(refusal) = inner_space(text, "percentage", |s| parse_percent(s).is_ok()) {
        return Err(refusal);
    }
    let s = text.trim();
    let invalid =
        || format!("invalid percentage `{text}`: expected a number from 0% to 100%, e.g. `30%`");
    let Some(number) = s.strip_suffix('%') else {
        let value: f64 = s.parse().map_err(|_| invalid())?;
        let hint = if (0.0..=1.0).contains(&value) && value > 0.0 {
            format!("write {}% or {value}%", value * 100.0)
        } else {
            format!("write {value}%")
        };
        return Err(format!(
            "invalid percentage `{text}`: a bare number is ambiguous (a percent or a fraction?): {hint}"
        ));
    };
    let value: f64 = number.trim().parse().map_err(|_| invalid())?;
    Percent::new(value)
        .ok_or_else(|| format!("invalid percentage `{text}`: expected a value from 0% to 100%"))
}

impl FromStr for Percent {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_percent(s)
    }
}

impl fmt::Display for Percent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}%", self.0)
    }
}

/// A number of bytes: `1024`, `64KB` (1000), `64KiB` (1024), `1MB`, `1MiB`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct ByteSize(pub u64);

fn parse_bytes(text: &str) -> Result<u64, String> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (number, unit) = s.split_at(split);
    let expected =
        || format!("invalid size `{text}`: expected bytes such as `512`, `64KB`, `1MiB`");
    if number.is_empty() {
        return Err(expected());
    }
    let n: f64 = number.parse().map_err(|_| expected())?;
    let scale = match unit.trim() {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "KiB" => 1024.0,
        "MB" => 1e6,
        "MiB" => 1024.0 * 1024.0,
        "GB" => 1e9,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(expected()),
    };
    let bytes = n * scale;
    let max = u64::MAX / 2;
    if !bytes.is_finite() || bytes > max as f64 {
        return Err(format!(
            "invalid size `{text}`: too large: expected at most {max} bytes"
        ));
    }
    Ok(bytes.round() as u64)
}

impl FromStr for ByteSize {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s.trim_start().starts_with('-') {
            return Err(format!("invalid size `{s}`: a size cannot be negative"));
        }
        if let Some(refusal) = inner_space(s, "size", |s| parse_bytes(s).is_ok()) {
            return Err(refusal);
        }
        parse_bytes(s).map(ByteSize)
    }
}

/// A throughput in kilobytes (1000 bytes) per second, written `100KB/s`,
/// `1MB/s`, or a bare number of KB/s. Must be greater than zero.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Rate {
    bytes_per_second: f64,
}

impl Rate {
    /// Bytes per second.
    pub fn bytes_per_second(self) -> f64 {
        self.bytes_per_second
    }

    /// A rate of `kb` kilobytes per second; `None` unless positive.
    pub fn from_kb_per_second(kb: f64) -> Option<Rate> {
        (kb > 0.0 && kb.is_finite()).then_some(Rate {
            bytes_per_second: kb * 1000.0,
        })
    }
}

impl FromStr for Rate {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let s = text.trim();
        if s.starts_with('-') {
            return Err(format!(
                "invalid rate `{text}`: a rate must be greater than zero"
            ));
        }
        if let Some(refusal) = inner_space(s, "rate", |s| s.parse::<Rate>().is_ok()) {
            return Err(refusal);
        }
        let bytes = match s.strip_suffix("/s") {
            Some(size) => parse_bytes(size).map_err(|_| {
                format!("invalid rate `{text}`: expected a rate such as `100KB/s` or `1MB/s`")
            })? as f64,
            None => {
                let kb: f64 = s.parse().map_err(|_| {
                    format!("invalid rate `{text}`: expected a rate such as `100KB/s` or a number of KB/s")
                })?;
                kb * 1000.0
            }
        };
        Rate::from_kb_per_second(bytes / 1000.0)
            .ok_or_else(|| format!("invalid rate `{text}`: a rate must be greater than zero"))
    }
}

/// Reads a value from a YAML scalar of any type (string, integer or float)
/// through `FromStr`, so `3s`, `30%` and `100` all take the same path.
struct ScalarVisitor<T>(std::marker::PhantomData<T>, &'static str);

impl<T> Visitor<'_> for ScalarVisitor<T>
where
    T: FromStr<Err = String>,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.1)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        v.parse().map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        self.visit_str(&v.to_string())
    }

    /// A float is echoed in its shortest form that reads back the same
    /// (`1e308` as written, not its 309 digits).
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        self.visit_str(&format!("{v:?}"))
    }
}

macro_rules! scalar_serde {
    ($ty:ty, $expecting:literal) => {
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                d.deserialize_any(ScalarVisitor(std::marker::PhantomData, $expecting))
            }
        }
    };
}

scalar_serde!(Dur, "a duration such as `150ms`, `3s` or `1m`");
scalar_serde!(Start, "a duration such as `10s`, or `manual`");

/// When a fault's window opens: a time from the start, or `manual` (a
/// person starts and stops it during the run, `firedrill run --control`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// This long after the start.
    At(Dur),
    /// When started through the control endpoint.
    Manual,
}

impl FromStr for Start {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        if text.trim() == "manual" {
            return Ok(Start::Manual);
        }
        text.parse::<Dur>()
            .map(Start::At)
            .map_err(|e| format!("{e}, or `manual`"))
    }
}
scalar_serde!(Percent, "a percentage such as `30%`");
scalar_serde!(ByteSize, "a size such as `512`, `64KB` or `1MiB`");
scalar_serde!(Rate, "a rate such as `100KB/s`");
scalar_serde!(ErrorStatus, "an HTTP status from 400 to 599");
scalar_serde!(
    GrpcError,
    "a gRPC status: a name such as UNAVAILABLE or a number from 1 to 16"
);
scalar_serde!(
    H2Error,
    "an HTTP/2 error code: a name such as REFUSED_STREAM or a number from 0 to 13"
);

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl Serialize for Percent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_space_between_a_number_and_its_unit_is_refused_as_durations_refuse_it() {
        assert_eq!(
            "50 %".parse::<Percent>().unwrap_err(),
            "invalid percentage `50 %`: a space inside it: expected the number and its unit together, `50%`"
        );
        assert_eq!(
            "64 KiB".parse::<ByteSize>().unwrap_err(),
            "invalid size `64 KiB`: a space inside it: expected the number and its unit together, `64KiB`"
        );
        assert_eq!(
            "100 KB/s".parse::<Rate>().unwrap_err(),
            "invalid rate `100 KB/s`: a space inside it: expected the number and its unit together, `100KB/s`"
        );
        assert!("10 s".parse::<Dur>().is_err());
        assert_eq!(" 50% ".parse::<Percent>(), Ok(Percent(50.0)));
        assert!(
            "3 parsecs"
                .parse::<ByteSize>()
                .unwrap_err()
                .contains("expected bytes such as")
        );
    }

    #[test]
    fn durations_parse_with_units_and_combinations() {
        assert_eq!(
            "150ms".parse::<Dur>().unwrap().get(),
            Duration::from_millis(150)
        );
        assert_eq!("3s".parse::<Dur>().unwrap().get(), Duration::from_secs(3));
        assert_eq!("1m".parse::<Dur>().unwrap().get(), Duration::from_secs(60));
        assert_eq!(
            "1m30s".parse::<Dur>().unwrap().get(),
            Duration::from_secs(90)
        );
        assert_eq!(
            "250us".parse::<Dur>().unwrap().get(),
            Duration::from_micros(250)
        );
        assert_eq!(
            "1.5s".parse::<Dur>().unwrap().get(),
            Duration::from_millis(1500)
        );
        assert_eq!("0".parse::<Dur>().unwrap().get(), Duration::ZERO);
    }

    #[test]
    fn durations_without_unit_or_negative_are_rejected() {
        for bad in ["3", "", "ms", "3 parsecs", "-1s", "1.2.3s"] {
            assert!(bad.parse::<Dur>().is_err(), "{bad} should be rejected");
        }
    }

    #[test]
    fn percentages_are_bounded_0_to_100() {
        assert_eq!("30%".parse::<Percent>().unwrap().fraction(), 0.3);
        assert_eq!("100%".parse::<Percent>().unwrap(), Percent::ALL);
        assert!("140%".parse::<Percent>().is_err());
        assert!("-1%".parse::<Percent>().is_err());
        assert!("lots".parse::<Percent>().is_err());
    }

    #[test]
    fn a_bare_number_is_refused_as_a_percentage_with_both_readings() {
        assert_eq!(
            "0.5".parse::<Percent>().unwrap_err(),
            "invalid percentage `0.5`: a bare number is ambiguous (a percent or a fraction?): write 50% or 0.5%"
        );
        assert!("30".parse::<Percent>().unwrap_err().ends_with("write 30%"));
        let from_yaml = serde_yaml_ng::from_str::<Percent>("0.5")
            .unwrap_err()
            .to_string();
        assert!(from_yaml.contains("write 50% or 0.5%"), "{from_yaml}");
    }

    #[test]
    fn a_duration_under_one_microsecond_is_refused_rather_than_read_as_zero() {
        assert_eq!(
            "0.0001us".parse::<Dur>().unwrap_err(),
            "invalid duration `0.0001us`: below 1us, the smallest step a duration keeps: expected 0 or at least 1us"
        );
        assert_eq!("0us".parse::<Dur>().unwrap().get(), Duration::ZERO);
        assert_eq!(
            "1us".parse::<Dur>().unwrap().get(),
            Duration::from_micros(1)
        );
    }

    #[test]
    fn too_large_durations_and_sizes_say_the_maximum() {
        assert_eq!(
            "2000000000s".parse::<Dur>().unwrap_err(),
            "invalid duration `2000000000s`: too large: expected at most 1000000000s"
        );
        assert_eq!(
            "99999999999GiB".parse::<ByteSize>().unwrap_err(),
            "invalid size `99999999999GiB`: too large: expected at most 9223372036854775807 bytes"
        );
    }

    #[test]
    fn a_huge_float_is_echoed_as_written_not_in_all_its_digits() {
        let err = serde_yaml_ng::from_str::<Dur>("1e308")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`1e308`"), "{err}");
        assert!(err.len() < 200, "{err}");
    }

    #[test]
    fn rates_and_sizes_parse_in_decimal_and_binary_units() {
        assert_eq!(
            "100KB/s".parse::<Rate>().unwrap().bytes_per_second(),
            100_000.0
        );
        assert_eq!("50".parse::<Rate>().unwrap().bytes_per_second(), 50_000.0);
        assert!("-5KB/s".parse::<Rate>().is_err());
        assert!("0".parse::<Rate>().is_err());
        assert_eq!("64KiB".parse::<ByteSize>().unwrap().0, 65536);
        assert_eq!("2KB".parse::<ByteSize>().unwrap().0, 2000);
        assert!("-3".parse::<ByteSize>().is_err());
    }

    #[test]
    fn durations_display_in_their_largest_exact_unit() {
        assert_eq!(Dur(Duration::from_millis(1500)).to_string(), "1500ms");
        assert_eq!(Dur(Duration::from_secs(3)).to_string(), "3s");
        assert_eq!(Dur(Duration::from_micros(7)).to_string(), "7us");
    }
}
