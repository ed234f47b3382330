//! Tests of the breaker.
