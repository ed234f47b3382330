//! The evidence of one breaker gathered from lists on disk ([`super::evidence`]
//! says what it is): the calls paired with their requests by a merge of
//! the two by id; without ids, the short-circuits and the answers a call
//! was given up at found by a sweep of the calls by arrival and the
//! requests by send. What stays in memory is the requests in flight at
//! once (the sweep) and a sort's run.

use super::caller::{Call, ShortCircuit};
use super::evidence::{Asked, Pairing, Quality};
use super::stream::{Failed, sorted};
use crate::clock::Duration;
use crate::spill::{Reader, Spill};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};

/// The evidence of one breaker, on disk: its calls in arrival order and
/// its short-circuits in answer order, each read as often as needed.
#[derive(Debug)]
pub struct Gathered {
    /// The calls, in arrival order.
    calls: Spill<Call>,
    /// The short-circuits, in answer order (of equal answers, the first
    /// request first), each with its request's place.
    shorts: Spill<(u64, ShortCircuit)>,
    /// How the two sides were paired.
    pub pairing: Pairing,
    /// What the evidence is worth.
    pub quality: Quality,
}

impl Gathered {
    /// Hands every call to `take`, in arrival order.
    pub fn calls(&mut self, failed: &mut Failed, take: &mut dyn FnMut(Call)) {
        self.calls.read_each(take);
        failed.spill(&self.calls);
    }

    /// Hands every short-circuit to `take`, in answer order.
    pub fn shorts(&mut self, failed: &mut Failed, take: &mut dyn FnMut(ShortCircuit)) {
        self.shorts.read_each(|(_, s)| take(s));
        failed.spill(&self.shorts);
    }
}

/// [`super::evidence::gather`] on lists on disk, held in memory only as
/// far as the requests in flight at once: `calls` as the records came (one
/// dependency's, on the breaker's paths) and `asked` by id (every request
/// the drill sent).
///
/// Calls are paired with their requests by a merge of the two by id;
/// without ids, short-circuits and the answers a call was given up at are
/// found by a sweep of the calls by arrival and the requests by send.
pub fn gather_streamed(
    calls: Spill<Call>,
    asked: &mut Spill<Asked>,
    failed: &mut Failed,
) -> Gathered {
    let mut calls = sorted(calls, |a, b| a.at.cmp(&b.at), failed);
    let pairs = paired_by_id(&mut calls, asked, failed);
    let by_id = pairs.paired > 0;
    // By time: the requests answered, by send.
    let mut by_send = Spill::new();
    if !by_id {
        asked.read_each(|a| {
            if let Some(r) = a.route
                && let Some(answered) = r.answered
            {
                by_send.push(&(r.sent, answered, r.seq));
            }
        });
        failed.spill(asked);
    }
    let by_send = sorted(by_send, |a: &Pending, b| a.0.cmp(&b.0), failed);
    let mut shorts = Spill::new();
    let fixes = sorted(pairs.fixes, |a: &Fix, b| a.place.cmp(&b.place), failed);
    let swept = sweep(&mut calls, fixes, by_id, by_send, &mut shorts, failed);
    let requests_reached = if by_id {
        shorts_by_id(asked, pairs.reached, &mut shorts, failed)
    } else {
        0
    };
    Gathered {
        quality: Quality {
            calls: swept.count,
            paired: pairs.paired,
            requests: pairs.requests,
            requests_reached,
            cut_off: pairs.cut_off,
            outstanding: swept.outstanding,
            ids_expected: by_id,
            lost: None,
            contradicted: Vec::new(),
        },
        calls: swept.calls,
        shorts: in_answer_order(shorts, failed),
        pairing: if by_id {
            Pairing::ById
        } else {
            Pairing::ByTime
        },
    }
}

/// A request answered before the end, by time: its send, its answer, its
/// place among the requests as they came.
type Pending = (Duration, Duration, u64);

/// A short-circuit before it is sorted: its answer, its request's place,
/// its send.
type Short = (Duration, u64, Duration);

/// The calls (by arrival) merged by id with the requests (by id).
fn paired_by_id(calls: &mut Spill<Call>, asked: &mut Spill<Asked>, failed: &mut Failed) -> Pairs {
    // The calls with an id, by id, each with its place in arrival order.
    let mut by_id = Spill::new();
    let mut place = 0u64;
    calls.read_each(|c| {
        if let Some(id) = c.request_id {
            by_id.push(&(id, place));
        }
        place += 1;
    });
    failed.spill(calls);
    let by_id = sorted(by_id, |a: &(u64, u64), b| a.0.cmp(&b.0), failed);
    let mut pairs = Pairs::new(by_id);
    asked.read_each(|a| pairs.take(Some(a)));
    pairs.take(None);
    failed.spill(asked);
    failed.reader(&mut pairs.calls);
    pairs
}

/// What the sweep of the calls by arrival gives.
struct Swept {
    /// The calls as evidence, by arrival.
    calls: Spill<Call>,
    /// How many.
    count: u64,
    /// Of those, the ones still outstanding at the end.
    outstanding: u64,
}

/// The calls by arrival, each with what the merge by id found of it
/// (`fixes`, by place) and (not `by_id`) beside the requests by send
/// (`by_send`): the calls as evidence, and by time the short-circuits
/// (into `shorts`).
fn sweep(
    calls: &mut Spill<Call>,
    fixes: Spill<Fix>,
    by_id: bool,
    by_send: Spill<Pending>,
    shorts: &mut Spill<Short>,
    failed: &mut Failed,
) -> Swept {
    let (mut fixes, mut pending) = (fixes.into_reader(), by_send.into_reader());
    let mut in_flight = InFlight::default();
    let mut out = Spill::new();
    let (mut place, mut outstanding) = (0u64, 0u64);
    {
        let mut fixes = (&mut fixes).peekable();
        let mut pending = (&mut pending).peekable();
        calls.read_each(|mut c| {
            let mut answer = None;
            if c.request_id.is_some() {
                while fixes.next_if(|f| f.place < place).is_some() {}
                let fix = fixes.next_if(|f| f.place == place);
                c.request_id = c.request_id.filter(|_| fix.is_some_and(|f| f.held));
                c.sent = fix.and_then(|f| f.sent);
                answer = fix.and_then(|f| f.answer);
            }
            if !by_id {
                // The first call at or after a request's send: none came
                // between its send and its answer if this one came after it.
                while let Some((sent, answered, seq)) = pending.next_if(|r| r.0 <= c.at) {
                    if c.at > answered {
                        shorts.push(&(answered, seq, sent));
                    }
                    in_flight.add(sent, answered);
                }
                in_flight.answered_before(c.at);
                answer = in_flight.latest();
            }
            given_up_when_answered(&mut c, answer);
            outstanding += u64::from(c.ended.is_none());
            out.push(&c);
            place += 1;
        });
        // No call came at or after these requests' sends.
        for (sent, answered, seq) in pending {
            shorts.push(&(answered, seq, sent));
        }
    }
    failed.spill(calls);
    failed.reader(&mut fixes);
    failed.reader(&mut pending);
    Swept {
        calls: out,
        count: place,
        outstanding,
    }
}

/// By id: the requests on the breaker's routes whose id no call carried
/// (`reached`, sorted) are short-circuits if answered (into `shorts`);
/// how many others there are (reached).
fn shorts_by_id(
    asked: &mut Spill<Asked>,
    reached: Spill<u64>,
    shorts: &mut Spill<Short>,
    failed: &mut Failed,
) -> u64 {
    let mut requests_reached = 0u64;
    let mut reached = reached.into_reader();
    let mut ids = (&mut reached).peekable();
    asked.read_each(|a| {
        let Some(r) = a.route else { return };
        while ids.next_if(|id| *id < a.id).is_some() {}
        if ids.peek() == Some(&a.id) {
            requests_reached += 1;
        } else if let Some(answered) = r.answered {
            shorts.push(&(answered, r.seq, r.sent));
        }
    });
    failed.spill(asked);
    failed.reader(&mut reached);
    requests_reached
}

/// The short-circuits by answer (of equal answers, the first request
/// first).
fn in_answer_order(shorts: Spill<Short>, failed: &mut Failed) -> Spill<(u64, ShortCircuit)> {
    let mut shorts = sorted(shorts, |a: &Short, b| (a.0, a.1).cmp(&(b.0, b.1)), failed);
    let mut in_order = Spill::new();
    shorts
        .read_each(|(answered, seq, sent)| in_order.push(&(seq, ShortCircuit { sent, answered })));
    failed.spill(&shorts);
    in_order
}

/// What the merge by id found of one call with an id.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
struct Fix {
    /// The call's place in arrival order.
    place: u64,
    /// Its id is one of the drill's requests.
    held: bool,
    /// When that request was sent, if on the breaker's routes.
    sent: Option<Duration>,
    /// When it was answered, if so and before the end.
    answer: Option<Duration>,
}

/// The merge of the calls with an id (by id) and the requests (by id).
struct Pairs {
    /// The calls with an id, by id, with their places.
    calls: Reader<(u64, u64)>,
    /// A call taken from them, not yet paired.
    next: Option<(u64, u64)>,
    /// The requests of the id at hand: the id, whether the drill sent it,
    /// the last send and the last answer on the breaker's routes (as a
    /// map filled in order keeps the last).
    group: Option<(u64, bool, Option<Duration>, Option<Duration>)>,
    /// What was found of each call.
    fixes: Spill<Fix>,
    /// The ids of the calls paired, sorted.
    reached: Spill<u64>,
    /// Calls paired.
    paired: u64,
    /// Requests on the breaker's routes.
    requests: u64,
    /// Of those, the ones answered after the end (or never).
    cut_off: u64,
}

impl Pairs {
    fn new(by_id: Spill<(u64, u64)>) -> Pairs {
        let mut calls = by_id.into_reader();
        Pairs {
            next: calls.next(),
            calls,
            group: None,
            fixes: Spill::new(),
            reached: Spill::new(),
            paired: 0,
            requests: 0,
            cut_off: 0,
        }
    }

    /// Takes the next request by id (`None`: there are no more).
    fn take(&mut self, asked: Option<Asked>) {
        let id = asked.as_ref().map(|a| a.id);
        if self.group.is_some_and(|g| Some(g.0) != id) {
            self.pair_up_to(id);
        }
        let Some(asked) = asked else {
            self.pair_up_to(None);
            return;
        };
        let group = self.group.get_or_insert((asked.id, false, None, None));
        group.1 |= asked.held;
        if let Some(r) = asked.route {
            self.requests += 1;
            self.cut_off += u64::from(r.answered.is_none());
            group.2 = Some(r.sent);
            group.3 = r.answered.or(group.3);
        }
    }

    /// Pairs the calls whose id is below `next` (all: `None`) with the
    /// requests of the id at hand, then leaves it.
    fn pair_up_to(&mut self, next: Option<u64>) {
        let group = self.group.take();
        while let Some((id, place)) = self.next.filter(|(id, _)| next.is_none_or(|n| *id < n)) {
            let found = group.filter(|g| g.0 == id && g.1);
            self.fixes.push(&Fix {
                place,
                held: found.is_some(),
                sent: found.and_then(|g| g.2),
                answer: found.and_then(|g| g.3),
            });
            if found.is_some() {
                self.paired += 1;
                self.reached.push(&id);
            }
            self.next = self.calls.next();
        }
    }
}

/// A failed call let go without an answer ended when the service gave up
/// on it: when it answered the caller request the call was made for
/// (`answer`), if that came first (a service closes the call's socket some
/// time after its own timeout fired). The request is the call's id, or by
/// time the last one sent before the call arrived and answered after.
fn given_up_when_answered(call: &mut Call, answer: Option<Duration>) {
    if !(call.failed && call.let_go) {
        return;
    }
    if let Some(ended) = call.ended
        && let Some(answer) = answer.filter(|a| *a >= call.at)
    {
        call.ended = Some(answer.min(ended));
    }
}

/// The requests sent and not yet answered at the time of the sweep, with
/// an answer to come before the end: by send then answer, and by answer.
#[derive(Debug, Default)]
struct InFlight {
    /// How many of each (send, answer).
    by_send: BTreeMap<(Duration, Duration), u64>,
    /// The same, the first answer first.
    by_answer: BinaryHeap<Reverse<(Duration, Duration)>>,
}

impl InFlight {
    /// A request sent at `sent`, answered at `answered`.
    fn add(&mut self, sent: Duration, answered: Duration) {
        *self.by_send.entry((sent, answered)).or_default() += 1;
        self.by_answer.push(Reverse((answered, sent)));
        #[cfg(test)]
        PEAK.with(|peak| peak.set(peak.get().max(self.by_answer.len())));
    }

    /// Forgets the requests answered before `at` (the sweep never goes
    /// back).
    fn answered_before(&mut self, at: Duration) {
        while let Some(Reverse((answered, sent))) = self.by_answer.peek().copied()
            && answered < at
        {
            self.by_answer.pop();
            if let Some(n) = self.by_send.get_mut(&(sent, answered)) {
                *n -= 1;
                if *n == 0 {
                    self.by_send.remove(&(sent, answered));
                }
            }
        }
    }

    /// The answer of the last one sent (of those sent together, the last
    /// answered).
    fn latest(&self) -> Option<Duration> {
        self.by_send
            .last_key_value()
            .map(|((_, answered), _)| *answered)
    }
}

#[cfg(test)]
thread_local! {
    /// The most requests in flight the sweep held at once, on this thread.
    static PEAK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spill::TEST_RUN;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A long run without ids, its lists sorted in many runs: the sweep
    /// holds the requests in flight at once (one here, and the one answered
    /// since the last call, forgotten at the next), not the run's;
    /// every request is paired by time, every failed call given up at its
    /// request's answer.
    #[test]
    fn the_sweep_of_a_long_run_holds_only_the_requests_in_flight() {
        let n = 20_000u64;
        let mut asked = Spill::new();
        let mut calls = Spill::new();
        // Request i: sent at 10 i ms, answered 6 ms later; its call
        // arrives 1 ms after the send and is let go 20 ms later, failed.
        for i in 0..n {
            asked.push(&Asked {
                id: i,
                held: true,
                route: Some(super::super::evidence::OnRoute {
                    seq: i,
                    sent: ms(10 * i),
                    answered: Some(ms(10 * i + 6)),
                }),
            });
        }
        for i in (0..n).rev() {
            calls.push(&Call {
                at: ms(10 * i + 1),
                ended: Some(ms(10 * i + 21)),
                failed: true,
                let_go: true,
                path: "/inventory/1".to_string(),
                request_id: None,
                sent: None,
            });
        }
        TEST_RUN.with(|r| r.set(Some(1_000)));
        PEAK.with(|p| p.set(0));
        let mut failed = Failed::default();
        let mut gathered = gather_streamed(calls, &mut asked, &mut failed);
        TEST_RUN.with(|r| r.set(None));
        assert!(failed.0.is_none());
        assert_eq!(PEAK.with(std::cell::Cell::get), 2);
        assert_eq!(gathered.pairing, Pairing::ByTime);
        assert_eq!((gathered.quality.calls, gathered.quality.requests), (n, n));
        let mut seen = 0u64;
        gathered.calls(&mut failed, &mut |c| {
            assert_eq!(c.at, ms(10 * seen + 1));
            assert_eq!(c.ended, Some(ms(10 * seen + 6)), "given up at the answer");
            seen += 1;
        });
        assert_eq!(seen, n);
        let mut shorts = 0;
        gathered.shorts(&mut failed, &mut |_| shorts += 1);
        assert_eq!(shorts, 0, "each request had its call");
    }
}
