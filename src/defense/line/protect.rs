//! Around the attempts: the rate limits, the workers and the route's
//! bulkhead turn a call away before it starts, the outer deadline bounds
//! the attempts, and every way of failing leads to the fallbacks with the
//! reason the caller is told.

use http::{Request, Response, StatusCode};
use tokio::sync::OwnedSemaphorePermit;

use super::attempts::Failed;
use super::{DefenseLine, Route};
use crate::clock;
use crate::defense::breaker::State;
use crate::defense::bulkhead::{Bulkhead, BulkheadFull};
use crate::defense::fallback;
use crate::defense::report::{CallError, CallReport, Rejection};
use crate::http::body::BoxBody;

impl DefenseLine {
    /// Runs one call through the line's protections, the route's, and the
    /// attempts; a call turned away or failed gets the route's fallback.
    pub(super) async fn protect(
        &self,
        route: &Route,
        req: Request<BoxBody>,
        report: &mut CallReport,
    ) -> Response<BoxBody> {
        // The request key (method and path) is needed only by the stale
        // cache and the backup call; other routes skip the allocation.
        let key = if route.stale.is_some() || route.backup.is_some() {
            let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
            format!("{} {path}", req.method())
        } else {
            String::new()
        };
        let now = clock::now();
        let limited = [&self.rate_limit, &route.rate_limit]
            .into_iter()
            .flatten()
            .any(|b| !b.try_take(now));
        if limited {
            report.rejected_by = Some(Rejection::RateLimit);
            return fallback::error_response(StatusCode::SERVICE_UNAVAILABLE, "rate-limited", None);
        }
        let Ok(_worker) = permit(self.workers.as_ref()).await else {
            report.rejected_by = Some(Rejection::Workers);
            return self
                .fall_back(route, &key, None, "workers-exhausted", None)
                .await;
        };
        let Ok(_slot) = permit(route.bulkhead.as_ref()).await else {
            report.rejected_by = Some(Rejection::Bulkhead);
            return self
                .fall_back(route, &key, None, "bulkhead-full", None)
                .await;
        };
        // A gRPC caller's own deadline bounds the call too: past it, the
        // caller has given up (DEADLINE_EXCEEDED).
        let deadline = [
            self.request_timeout,
            crate::http::grpc::timeout_in(req.headers()),
        ]
        .into_iter()
        .flatten()
        .min();
        let attempts = self.try_attempts(route, req, &key, report);
        let result = match deadline {
            Some(deadline) => match tokio::time::timeout(deadline, attempts).await {
                Ok(r) => r,
                Err(_) => {
                    report.error = Some(CallError::Deadline);
                    Failed::Deadline
                }
            },
            None => attempts.await,
        };
        match result {
            Failed::Answered(resp) => resp,
            Failed::Rejected { state, retry_after } => {
                report.rejected_by = Some(Rejection::Breaker);
                let reason = if state == State::HalfOpen {
                    "breaker-half-open"
                } else {
                    "breaker-open"
                };
                self.fall_back(route, &key, None, reason, retry_after).await
            }
            Failed::Status(resp) => {
                self.fall_back(route, &key, Some(resp), "upstream-status", None)
                    .await
            }
            Failed::Timeout => self.fall_back(route, &key, None, "timeout", None).await,
            Failed::Deadline => {
                self.fall_back(route, &key, None, "request-timeout", None)
                    .await
            }
            Failed::Connect => {
                self.fall_back(route, &key, None, "upstream-connect", None)
                    .await
            }
            Failed::Broken => {
                self.fall_back(route, &key, None, "upstream-error", None)
                    .await
            }
            Failed::NoServer => {
                self.fall_back(route, &key, None, "pool-no-server", None)
                    .await
            }
        }
    }
}

/// A permit of `bulkhead`, held for the call (none without a bulkhead);
/// `Err` when it is full.
async fn permit(bulkhead: Option<&Bulkhead>) -> Result<Option<OwnedSemaphorePermit>, BulkheadFull> {
    match bulkhead {
        Some(b) => b.acquire().await.map(Some),
        None => Ok(None),
    }
}
