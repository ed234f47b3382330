//! The status and error codes a fault answers with: an HTTP error status
//! (`503`), a gRPC status (`UNAVAILABLE` or `14`) and an HTTP/2 error code
//! (`REFUSED_STREAM` or `7`), each read by name or number.

use std::fmt;
use std::str::FromStr;

/// An HTTP error status, 400 to 599.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorStatus(pub u16);

impl FromStr for ErrorStatus {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().parse::<i64>() {
            Ok(code @ 400..=599) => Ok(ErrorStatus(code as u16)),
            _ => Err(format!(
                "invalid status `{text}`: expected an HTTP error status from 400 to 599"
            )),
        }
    }
}

/// The status codes, by number, as gRPC names them.
pub const GRPC_STATUS_NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A gRPC status code's name, `OK` to `UNAUTHENTICATED` (a code past 16
/// is read as gRPC reads it, as `UNKNOWN`).
pub fn grpc_status_name(code: u8) -> &'static str {
    GRPC_STATUS_NAMES
        .get(usize::from(code))
        .copied()
        .unwrap_or("UNKNOWN")
}

/// The gRPC status code a name (any case) or number, `OK` included,
/// stands for.
pub fn grpc_status_code(text: &str) -> Option<u8> {
    match text.parse::<u8>() {
        Ok(n) => (usize::from(n) < GRPC_STATUS_NAMES.len()).then_some(n),
        Err(_) => GRPC_STATUS_NAMES
            .iter()
            .position(|name| name.eq_ignore_ascii_case(text))
            .and_then(|i| u8::try_from(i).ok()),
    }
}

/// A gRPC status code other than OK, as a fault answers it: written as
/// its name (`UNAVAILABLE`, any case) or its number (`14`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpcError(u8);

impl GrpcError {
    /// The code's number.
    pub fn code(self) -> u8 {
        self.0
    }

    /// The code's name, `UNAVAILABLE`.
    pub fn name(self) -> &'static str {
        GRPC_STATUS_NAMES[usize::from(self.0)]
    }
}

impl fmt::Display for GrpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

impl FromStr for GrpcError {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let code = grpc_status_code(text);
        match code {
            Some(0) => Err(format!(
                "`{text}` is OK, no error: expected a gRPC error status, 1 to 16 or a name such as UNAVAILABLE"
            )),
            Some(code) => Ok(GrpcError(code)),
            None => Err(format!(
                "invalid gRPC status `{text}`: expected 1 to 16 or one of {}",
                GRPC_STATUS_NAMES[1..].join(", ")
            )),
        }
    }
}

/// The HTTP/2 error codes, by number (RFC 9113, section 7).
pub const H2_ERROR_NAMES: [&str; 14] = [
    "NO_ERROR",
    "PROTOCOL_ERROR",
    "INTERNAL_ERROR",
    "FLOW_CONTROL_ERROR",
    "SETTINGS_TIMEOUT",
    "STREAM_CLOSED",
    "FRAME_SIZE_ERROR",
    "REFUSED_STREAM",
    "CANCEL",
    "COMPRESSION_ERROR",
    "CONNECT_ERROR",
    "ENHANCE_YOUR_CALM",
    "INADEQUATE_SECURITY",
    "HTTP_1_1_REQUIRED",
];

/// An HTTP/2 error code, as an RST_STREAM carries it: written as its name
/// (`REFUSED_STREAM`, any case) or its number (`7`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Error(u32);

impl H2Error {
    /// The code's number.
    pub fn code(self) -> u32 {
        self.0
    }
}

impl fmt::Display for H2Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = usize::try_from(self.0)
            .ok()
            .and_then(|i| H2_ERROR_NAMES.get(i));
        write!(f, "{} ({})", name.unwrap_or(&"?"), self.0)
    }
}

impl FromStr for H2Error {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let text = text.trim();
        let index = match text.parse::<usize>() {
            Ok(n) => (n < H2_ERROR_NAMES.len()).then_some(n),
            Err(_) => H2_ERROR_NAMES
                .iter()
                .position(|name| name.eq_ignore_ascii_case(text)),
        };
        index
            .and_then(|i| u32::try_from(i).ok())
            .map(H2Error)
            .ok_or_else(|| {
                format!(
                    "invalid HTTP/2 error code `{text}`: expected 0 to 13 or one of {}",
                    H2_ERROR_NAMES.join(", ")
                )
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_is_read_by_name_in_any_case_or_by_number_and_ok_is_no_error() {
        assert_eq!("UNAVAILABLE".parse::<GrpcError>(), Ok(GrpcError(14)));
        assert_eq!("deadline_exceeded".parse::<GrpcError>(), Ok(GrpcError(4)));
        assert_eq!("16".parse::<GrpcError>().unwrap().name(), "UNAUTHENTICATED");
        assert_eq!(
            "1".parse::<GrpcError>().unwrap().to_string(),
            "CANCELLED (1)"
        );
        let ok = "OK".parse::<GrpcError>().unwrap_err();
        assert!(ok.contains("is OK, no error"), "{ok}");
        assert!(
            "0".parse::<GrpcError>()
                .unwrap_err()
                .contains("is OK, no error")
        );
        for bad in ["17", "-1", "UNAVAILABLE_", ""] {
            let e = bad.parse::<GrpcError>().unwrap_err();
            assert!(
                e.starts_with(&format!("invalid gRPC status `{bad}`")),
                "{e}"
            );
            assert!(e.contains("CANCELLED, UNKNOWN"), "{e}");
        }
    }
}
