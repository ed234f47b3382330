//! What a request's faults decide, in file order: shape it (latency,
//! bandwidth, a truncated response), or answer it themselves (a status, a
//! replayed answer), cut it, or hold it forever (blackhole, a replayed
//! hang).

use std::ops::ControlFlow;
use std::sync::atomic::Ordering;

use http::{Request, Response};
use hyper::body::Incoming;

use super::{Conn, body, mark_fault, status_response};
use crate::clock::{self, Instant};
use crate::fault::replay::Replay;
use crate::fault::spec::{Cut, Per};
use crate::fault::{Direction, FaultKind, Hit};
use crate::http::BoxBody;
use crate::net::Connector;
use crate::proxy::record::RequestLog;
use crate::trace::Answer;

/// The decision of the request's faults, in file order.
#[derive(Default)]
pub(super) struct Decision {
    /// Hold the request until then (request latency).
    pub(super) request_at: Option<Instant>,
    /// Hold the response this long after it arrived (response latency).
    pub(super) response_delay: Option<clock::Duration>,
    /// Cut the response body after this many bytes; RST when true (an
    /// HTTP/2 stream: reset with the code).
    pub(super) truncate: Option<(u64, bool, Option<crate::schema::units::H2Error>)>,
    /// Pace the request body (upstream) and the response body (downstream).
    pub(super) rate: [Option<f64>; 2],
    /// Hold each gRPC message of the request body (upstream) and of the
    /// response body (downstream), each for a delay of its own.
    pub(super) per_message: [Option<body::MessageDelay>; 2],
}

/// How a request a fault dealt with ends: answered (the response not yet
/// logged), or cut.
type Answered = Result<Response<BoxBody>, body::Cut>;

impl<C: Connector> Conn<C> {
    /// Runs the request's hits in order: `Continue` with how to shape a
    /// request that goes on upstream, `Break` with the end of one a fault
    /// answered or cut (a blackhole never ends).
    pub(super) async fn decide(
        &self,
        hits: &[Hit],
        req: &Request<Incoming>,
        arrival: Instant,
        log: &mut RequestLog<'_>,
    ) -> ControlFlow<Answered, Decision> {
        let mut decision = Decision::default();
        let path = req.uri().path();
        for hit in hits {
            let plan = &self.plan;
            match &hit.fault().kind {
                FaultKind::Latency(l)
                    if l.per == Per::Message && crate::http::grpc::is_grpc(req.headers()) =>
                {
                    plan.record_hit(hit, path);
                    log.shaped_by(hit);
                    // Each message draws its own delay from the fault's
                    // seeded stream.
                    let (plan, hit, latency) = (plan.clone(), hit.clone(), l.clone());
                    decision.per_message[l.direction as usize] =
                        Some(Box::new(move || plan.hit_delay(&hit, &latency)));
                }
                FaultKind::Latency(l) => {
                    plan.record_hit(hit, path);
                    log.shaped_by(hit);
                    let delay = plan.hit_delay(hit, l);
                    match l.direction {
                        Direction::Upstream => decision.request_at = Some(arrival + delay),
                        Direction::Downstream => decision.response_delay = Some(delay),
                    }
                }
                FaultKind::Bandwidth(b) => {
                    plan.record_hit(hit, path);
                    log.shaped_by(hit);
                    let slot = &mut decision.rate[b.direction as usize];
                    let rate = b.rate.bytes_per_second();
                    *slot = Some(slot.map_or(rate, |r| r.min(rate)));
                }
                FaultKind::Reset(cut) | FaultKind::Close(cut) => {
                    // An HTTP/2 client's stream is reset, not its
                    // connection, which its other streams share.
                    let reset = matches!(hit.fault().kind, FaultKind::Reset(_))
                        && req.version() != http::Version::HTTP_2;
                    plan.record_hit(hit, path);
                    log.decided_by(hit);
                    match cut.after_bytes {
                        Some(limit) => decision.truncate = Some((limit.0, reset, cut.code)),
                        None => {
                            return ControlFlow::Break(self.cut(&decision, cut, reset).await);
                        }
                    }
                }
                FaultKind::Status(s) => {
                    plan.record_hit(hit, path);
                    log.decided_by(hit);
                    if let Some(at) = decision.request_at {
                        clock::sleep_until_precise(at).await;
                    }
                    let resp = status_response(s.code.0, &s.body, &s.headers, hit);
                    return ControlFlow::Break(Ok(resp));
                }
                FaultKind::Grpc(g) => {
                    plan.record_hit(hit, path);
                    log.decided_by(hit);
                    if let Some(at) = decision.request_at {
                        clock::sleep_until_precise(at).await;
                    }
                    let mut resp = crate::http::grpc::failed_call(g.status, &g.message);
                    mark_fault(&mut resp, hit);
                    return ControlFlow::Break(Ok(resp));
                }
                FaultKind::GoAway => {
                    // The request goes on; its connection ends once the
                    // requests in flight are answered.
                    plan.record_hit(hit, path);
                    log.shaped_by(hit);
                    self.goaway.send_replace(true);
                }
                FaultKind::Blackhole => {
                    // Accepted and never answered, like a hung server: a
                    // request that fell in stays unanswered after the
                    // window ends, until the client gives up (or the proxy
                    // shuts down). Requests after the window pass through.
                    plan.record_hit(hit, path);
                    log.decided_by(hit);
                    return std::future::pending().await;
                }
                FaultKind::Replay(replay) => {
                    let replayed = self.replay(hit, replay, path, arrival, log, &mut decision);
                    if let Some(answered) = replayed.await {
                        return ControlFlow::Break(answered);
                    }
                }
                // `refuse` acts on the listener (the accept loop's gate);
                // byte-stream kinds never reach an HTTP proxy (the mode
                // check refuses them), so a TCP-only kind added later needs
                // no arm here.
                _ => {}
            }
        }
        ControlFlow::Continue(decision)
    }

    /// A cut before the response: after the request's latency and the
    /// cut's `after`, the connection closes (with RST for `reset`).
    async fn cut(&self, decision: &Decision, cut: &Cut, reset: bool) -> Answered {
        if let Some(at) = decision.request_at {
            clock::sleep_until_precise(at).await;
        }
        if let Some(after) = cut.after {
            clock::sleep(after.get()).await;
        }
        if reset {
            self.reset.store(true, Ordering::SeqCst);
        }
        Err(body::Cut::new(0, cut.code))
    }

    /// A replayed answer, at the recorded latency: a success goes on to
    /// the real upstream, late (`None`, as does a request the recording
    /// draws nothing for); a hang never ends; an error status is answered
    /// and a reset cuts.
    async fn replay(
        &self,
        hit: &Hit,
        replay: &Replay,
        path: &str,
        arrival: Instant,
        log: &mut RequestLog<'_>,
        decision: &mut Decision,
    ) -> Option<Answered> {
        let outcome = self.plan.hit_replay(hit, replay)?;
        self.plan.record_hit(hit, path);
        let answer_at = arrival + outcome.latency;
        match outcome.answer {
            // A success goes to the real upstream, late.
            Answer::Status(code) if code < 400 => {
                log.shaped_by(hit);
                decision.request_at = Some(answer_at);
                return None;
            }
            Answer::Hang => {
                log.decided_by(hit);
                return std::future::pending().await;
            }
            _ => {}
        }
        log.decided_by(hit);
        clock::sleep_until_precise(answer_at).await;
        let Answer::Status(code) = outcome.answer else {
            self.reset.store(true, Ordering::SeqCst);
            return Some(Err(body::Cut::new(0, None)));
        };
        let resp = status_response(code, "", &Default::default(), hit);
        Some(Ok(resp))
    }
}
