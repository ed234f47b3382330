//! The API's error: a status and a message, sent as Toxiproxy sends it,
//! `{"error": "proxy not found", "status": 404}`.

use http::StatusCode;

/// A failed API call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong, in Toxiproxy's words where Toxiproxy has them.
    pub message: String,
}

impl ApiError {
    /// An error with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            message: message.into(),
        }
    }

    /// 400 `bad request body: <why>` (malformed or mistyped JSON).
    pub fn bad_body(why: impl std::fmt::Display) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, format!("bad request body: {why}"))
    }

    /// 400 `missing required field: <field>`.
    pub fn missing(field: &str) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("missing required field: {field}"),
        )
    }

    /// 400 with a firedrill validation message.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, message)
    }

    /// 404 `proxy not found`.
    pub fn proxy_not_found() -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "proxy not found")
    }

    /// 409 `proxy already exists`.
    pub fn proxy_exists() -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "proxy already exists")
    }

    /// 404 `toxic not found`.
    pub fn toxic_not_found() -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, "toxic not found")
    }

    /// 409 `toxic already exists`.
    pub fn toxic_exists() -> ApiError {
        ApiError::new(StatusCode::CONFLICT, "toxic already exists")
    }

    /// 400 `invalid toxic type`.
    pub fn invalid_type() -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid toxic type")
    }

    /// 400 for a stream other than upstream or downstream.
    pub fn invalid_stream() -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "stream was invalid, can be either upstream or downstream",
        )
    }

    /// 500 with the cause (a listener that cannot be bound).
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, message)
    }

    /// The JSON body.
    pub fn body(&self) -> String {
        serde_json::json!({ "error": self.message, "status": self.status.as_u16() }).to_string()
    }
}
