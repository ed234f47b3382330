//! The defense line: the protections a call passes through before it reaches
//! the dependency (circuit breaker first; bulkhead, timeout, retry and
//! fallback follow).

pub mod breaker;
