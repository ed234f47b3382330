//! The active health check of one pool server: a `GET uri` every
//! `interval` on the run's clock (the first at once), through the same
//! upstream as the server's calls, so a fault on the server hits its
//! checks too. Checks carry `x-firedrill-health-check: 1` and no request
//! id, so they are never counted as client calls.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Limited};

use super::config::HealthCheckConfig;
use super::{HEALTH_CHECK_HEADER, Pool};
use crate::clock;
use crate::http::body::full;
use crate::http::client::Upstream;
use crate::schema::units::Dur;

/// The most of a health-check body read for the body match.
const MAX_BODY: usize = 64 * 1024;

/// Checks server `index` of `pool` every `check.interval` until the pool
/// is dropped.
pub async fn run(
    pool: Weak<Pool>,
    index: usize,
    check: HealthCheckConfig,
    upstream: Arc<dyn Upstream>,
) {
    let mut next = clock::now();
    loop {
        clock::sleep_until(next).await;
        let failure = check_once(upstream.as_ref(), &check).await;
        let Some(pool) = pool.upgrade() else { return };
        pool.checked(index, failure.as_deref());
        drop(pool);
        next += check.interval;
    }
}

/// One check: `None` when it passed, else what was wrong.
pub async fn check_once(upstream: &dyn Upstream, check: &HealthCheckConfig) -> Option<String> {
    let request = Request::get(check.uri.as_str())
        .header(HEALTH_CHECK_HEADER, "1")
        .body(full(Bytes::new()))
        .expect("the uri was validated");
    let answer = async {
        let resp = upstream.send(request).await?;
        let (parts, body) = resp.into_parts();
        let body = match &check.matcher.body {
            Some(_) => Limited::new(body, MAX_BODY)
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default(),
            None => Bytes::new(),
        };
        Ok::<_, crate::http::client::SendError>((parts, body))
    };
    match tokio::time::timeout(check.timeout, answer).await {
        Err(_) => Some(format!("no answer within {}", Dur(check.timeout))),
        Ok(Err(err)) if err.is_connect() => Some("cannot connect".to_string()),
        Ok(Err(_)) => Some("connection broken".to_string()),
        Ok(Ok((parts, body))) => {
            check
                .matcher
                .failure(parts.status.as_u16(), &parts.headers, &body)
        }
    }
}
