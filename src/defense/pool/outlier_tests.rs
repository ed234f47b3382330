//! The outlier detection against a reference model written from Envoy's
//! `outlier_detection_impl.cc` (its `DetectorHostMonitorImpl` and
//! `DetectorImpl`: `putHttpResponseCode`, `onConsecutiveErrorWorker`,
//! `ejectHost`, `checkHostForUneject`, `onIntervalTimer`), and examples of
//! each edge: the ejection cap, the growing ejection time, returns only
//! at sweeps, gateway failures against 5xx.

use proptest::prelude::*;

use super::*;

/// A reference model of Envoy's detector, kept in Envoy's own terms:
/// per-host monitors, an active-ejections gauge, an interval timer, and
/// the posted consecutive-error events processed in order. Time is whole
/// milliseconds since the detector started.
mod envoy {
    /// `DetectorHostMonitorImpl`.
    #[derive(Debug, Clone, Default)]
    pub(super) struct Monitor {
        pub consecutive_5xx: u64,
        pub(super) consecutive_gateway_failure: u64,
        pub(super) failed_outlier_check: bool,
        pub(super) num_ejections: u64,
        pub(super) last_ejection_time: Option<u64>,
        pub(super) last_unejection_time: Option<u64>,
        pub(super) eject_time_backoff: u64,
    }

    /// The `OutlierDetection` settings the model reads, in milliseconds.
    #[derive(Debug, Clone)]
    pub(super) struct Config {
        pub consecutive_5xx: u64,
        pub(super) consecutive_gateway_failure: u64,
        pub enforcing_consecutive_5xx: u64,
        pub(super) enforcing_consecutive_gateway_failure: u64,
        pub(super) interval_ms: u64,
        pub(super) base_ejection_time_ms: u64,
        pub(super) max_ejection_time_ms: u64,
        pub(super) max_ejection_percent: u64,
        pub(super) always_eject_one_host: bool,
    }

    #[derive(Debug, Clone, Copy)]
    pub(super) enum EjectionType {
        Consecutive5xx,
        ConsecutiveGatewayFailure,
    }

    /// `DetectorImpl`.
    #[derive(Debug, Clone)]
    pub(super) struct Detector {
        pub(super) config: Config,
        pub(super) monitors: Vec<Monitor>,
        pub(super) ejections_active: u64,
        pub(super) timer_at: u64,
    }

    impl Detector {
        pub(super) fn new(config: Config, hosts: usize) -> Detector {
            Detector {
                timer_at: config.interval_ms,
                config,
                monitors: vec![Monitor::default(); hosts],
                ejections_active: 0,
            }
        }

        /// The clock moves to `now`: the interval timer fires on time.
        pub(super) fn run_until(&mut self, now: u64) {
            while self.timer_at <= now {
                let at = self.timer_at;
                self.on_interval_timer(at);
                self.timer_at = at + self.config.interval_ms;
            }
        }

        /// `putResult` without the local/external split, then the posted
        /// events on the main thread.
        pub(super) fn put_result(&mut self, host: usize, code: Option<u64>, now: u64) {
            let Some(code) = code else { return };
            let mut posted = Vec::new();
            let m = &mut self.monitors[host];
            if (500..600).contains(&code) {
                if code == 502 || code == 503 || code == 504 {
                    m.consecutive_gateway_failure += 1;
                    if m.consecutive_gateway_failure == self.config.consecutive_gateway_failure {
                        posted.push(EjectionType::ConsecutiveGatewayFailure);
                    }
                } else {
                    m.consecutive_gateway_failure = 0;
                }
                m.consecutive_5xx += 1;
                if m.consecutive_5xx == self.config.consecutive_5xx {
                    posted.push(EjectionType::Consecutive5xx);
                }
            } else {
                m.consecutive_5xx = 0;
                m.consecutive_gateway_failure = 0;
            }
            for t in posted {
                self.on_consecutive_error_worker(host, t, now);
            }
        }

        fn on_consecutive_error_worker(&mut self, host: usize, t: EjectionType, now: u64) {
            if self.monitors[host].failed_outlier_check {
                return;
            }
            self.eject_host(host, t, now);
            match t {
                EjectionType::Consecutive5xx => self.monitors[host].consecutive_5xx = 0,
                EjectionType::ConsecutiveGatewayFailure => {
                    self.monitors[host].consecutive_gateway_failure = 0;
                }
            }
        }

        fn enforce(&self, t: EjectionType) -> bool {
            // featureEnabled(key, percent): 0 never, 100 always.
            let percent = match t {
                EjectionType::Consecutive5xx => self.config.enforcing_consecutive_5xx,
                EjectionType::ConsecutiveGatewayFailure => {
                    self.config.enforcing_consecutive_gateway_failure
                }
            };
            assert!(
                percent == 0 || percent == 100,
                "only 0 and 100 are modelled"
            );
            percent == 100
        }

        fn eject_host(&mut self, host: usize, t: EjectionType, now: u64) {
            let max_ejection_percent = self.config.max_ejection_percent.min(100);
            let ejected_percent =
                100.0 * (self.ejections_active + 1) as f64 / self.monitors.len() as f64;
            let mut should_eject = ejected_percent <= max_ejection_percent as f64;
            if self.config.always_eject_one_host {
                should_eject = self.ejections_active == 0 || should_eject;
            }
            if should_eject && self.enforce(t) {
                self.ejections_active += 1;
                let base = self.config.base_ejection_time_ms;
                let max = self.config.max_ejection_time_ms;
                let m = &mut self.monitors[host];
                m.failed_outlier_check = true;
                m.num_ejections += 1;
                m.last_ejection_time = Some(now);
                if m.eject_time_backoff * base < max + base {
                    m.eject_time_backoff += 1;
                }
            }
        }

        fn check_host_for_uneject(&mut self, host: usize, now: u64) {
            let base = self.config.base_ejection_time_ms;
            let max = self.config.max_ejection_time_ms;
            let m = &self.monitors[host];
            if !m.failed_outlier_check {
                return;
            }
            if (base * m.eject_time_backoff).min(max) <= now - m.last_ejection_time.unwrap() {
                self.ejections_active -= 1;
                let m = &mut self.monitors[host];
                m.failed_outlier_check = false;
                m.consecutive_5xx = 0;
                m.consecutive_gateway_failure = 0;
                m.last_unejection_time = Some(now);
            }
        }

        fn on_interval_timer(&mut self, now: u64) {
            for host in 0..self.monitors.len() {
                self.check_host_for_uneject(host, now);
            }
            let interval = self.config.interval_ms;
            for m in &mut self.monitors {
                if !m.failed_outlier_check
                    && m.last_unejection_time.is_some_and(|t| now - t >= interval)
                    && m.eject_time_backoff != 0
                {
                    m.eject_time_backoff -= 1;
                }
            }
        }

        pub(super) fn in_rotation(&self) -> Vec<bool> {
            self.monitors
                .iter()
                .map(|m| !m.failed_outlier_check)
                .collect()
        }
    }
}

/// What a step of a sequence does.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// Server `0` answers `1` after `2` ms.
    Answer(usize, Answer, u64),
}

fn answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        Just(Answer::Status(200)),
        Just(Answer::Status(404)),
        Just(Answer::Status(500)),
        Just(Answer::Status(502)),
        Just(Answer::Status(503)),
        Just(Answer::Status(504)),
        Just(Answer::ConnectFailed),
        Just(Answer::Timeout),
        Just(Answer::Reset),
    ]
}

/// The status Envoy's router reports for an answer (`resultToHttpCode`
/// without the split; a reset after connecting reports no failure).
fn envoy_code(a: Answer) -> Option<u64> {
    match a {
        Answer::Status(s) => Some(u64::from(s)),
        Answer::ConnectFailed => Some(503),
        Answer::Timeout => Some(504),
        Answer::Reset => None,
    }
}

/// A configuration for both: firedrill's and the model's.
fn configs() -> impl Strategy<Value = (OutlierConfig, envoy::Config, usize)> {
    (
        0u32..6,
        prop_oneof![Just(0u32), 1u32..5],
        1u64..20,
        1u64..40,
        0u64..200,
        prop_oneof![
            Just(0u64),
            Just(10),
            Just(20),
            Just(33),
            Just(50),
            Just(100),
            0u64..=100
        ],
        any::<bool>(),
        1usize..12,
    )
        .prop_map(|(c5, gw, interval, base, extra, pct, one, hosts)| {
            let ms = Duration::from_millis;
            let max = base + extra;
            let ours = OutlierConfig {
                consecutive_5xx: c5,
                consecutive_gateway_failure: gw,
                interval: ms(interval * 100),
                base_ejection_time: ms(base * 100),
                max_ejection_time: ms(max * 100),
                max_ejection_percent: Percent::new(pct as f64).unwrap(),
                always_eject_one_host: one,
                panic_threshold: Percent::new(50.0).unwrap(),
            };
            // Envoy: a threshold of 0 never matches (a count is at least
            // 1); firedrill's 0 (off) is Envoy's enforcing 0 too.
            let theirs = envoy::Config {
                consecutive_5xx: u64::from(c5),
                consecutive_gateway_failure: u64::from(gw.max(1)),
                enforcing_consecutive_5xx: 100,
                enforcing_consecutive_gateway_failure: if gw == 0 { 0 } else { 100 },
                interval_ms: interval * 100,
                base_ejection_time_ms: base * 100,
                max_ejection_time_ms: max * 100,
                max_ejection_percent: pct,
                always_eject_one_host: one,
            };
            (ours, theirs, hosts)
        })
}

fn steps(hosts: usize) -> impl Strategy<Value = Vec<Step>> {
    let gap = prop_oneof![
        Just(0u64),
        1u64..300,
        Just(100),
        Just(1000),
        1000u64..40_000
    ];
    prop::collection::vec(
        (0..hosts, answer(), gap).prop_map(|(h, a, g)| Step::Answer(h, a, g)),
        1..200,
    )
}

fn in_rotation(d: &Detector) -> Vec<bool> {
    (0..d.hosts.len()).map(|i| !d.is_ejected(i)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1000,
        rng_seed: proptest::test_runner::RngSeed::Fixed(0x0e1e_c7ed),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// After every answer and every sweep, the servers in rotation are the
    /// hosts Envoy's detector has not ejected.
    #[test]
    fn the_servers_in_rotation_are_envoys_at_every_step(
        (ours, theirs, hosts, seq) in configs().prop_flat_map(|(o, t, h)| {
            (Just(o), Just(t), Just(h), steps(h))
        })
    ) {
        let start = Instant::now();
        let mut d = Detector::new(ours, hosts, start);
        let mut e = envoy::Detector::new(theirs, hosts);
        let mut now = 0u64;
        for (i, step) in seq.iter().enumerate() {
            let Step::Answer(host, a, gap) = *step;
            now += gap;
            let at = start + Duration::from_millis(now);
            d.advance(at);
            e.run_until(now);
            prop_assert_eq!(in_rotation(&d), e.in_rotation(), "after the sweeps before step {} at {} ms", i, now);
            d.on_answer(host, a, at);
            e.put_result(host, envoy_code(a), now);
            prop_assert_eq!(in_rotation(&d), e.in_rotation(), "after step {} ({:?}) at {} ms", i, step, now);
        }
    }
}

fn config(yaml: &str) -> OutlierConfig {
    crate::schema::from_yaml_str("outlier.yaml", yaml).unwrap()
}

/// Server 0 ejected `times` times from `start`, each time again as soon as
/// a sweep (every second) brings it back: how long each ejection was for,
/// and when it came back the last time.
fn ejected_again_and_again(
    d: &mut Detector,
    times: usize,
    start: Instant,
) -> (Vec<String>, Instant) {
    let mut outs = Vec::new();
    let mut now = start;
    for _ in 0..times {
        let why = answers(d, 0, 500, 5, now).unwrap();
        outs.push(why.rsplit(' ').next().unwrap().to_string());
        while d.is_ejected(0) {
            now += Duration::from_secs(1);
            d.advance(now);
        }
    }
    (outs, now)
}

/// Server `host` answers `status` `n` times at `now`; the last reason.
fn answers(d: &mut Detector, host: usize, status: u16, n: usize, now: Instant) -> Option<String> {
    let mut why = None;
    for _ in 0..n {
        d.advance(now);
        why = d.on_answer(host, Answer::Status(status), now).or(why);
    }
    why
}

#[test]
fn the_fifth_5xx_in_a_row_ejects_and_a_success_between_starts_again() {
    let t0 = Instant::now();
    let mut d = Detector::new(config("max_ejection_percent: 100%"), 2, t0);
    assert_eq!(answers(&mut d, 0, 500, 4, t0), None);
    answers(&mut d, 0, 200, 1, t0);
    assert_eq!(answers(&mut d, 0, 503, 4, t0), None);
    assert!(!d.is_ejected(0));
    let why = answers(&mut d, 0, 500, 1, t0).expect("ejected");
    assert_eq!(why, "outlier: 5 5xx answers in a row, out for at least 30s");
    assert!(d.is_ejected(0));
    assert!(!d.is_ejected(1));
}

#[test]
fn the_default_10_percent_cap_ejects_nobody_below_ten_servers() {
    let t0 = Instant::now();
    let mut nine = Detector::new(OutlierConfig::default(), 9, t0);
    assert_eq!(answers(&mut nine, 0, 500, 50, t0), None);
    assert_eq!(nine.ejected(), 0, "1 of 9 is 11 % > 10 %");
    let mut ten = Detector::new(OutlierConfig::default(), 10, t0);
    assert!(
        answers(&mut ten, 0, 500, 5, t0).is_some(),
        "1 of 10 is 10 %"
    );
    assert_eq!(answers(&mut ten, 1, 500, 50, t0), None, "2 of 10 is 20 %");
    assert_eq!(ten.ejected(), 1);
    let mut one = Detector::new(config("always_eject_one_host: true"), 3, t0);
    assert!(answers(&mut one, 0, 500, 5, t0).is_some());
    assert_eq!(answers(&mut one, 1, 500, 50, t0), None);
    assert_eq!(one.ejected(), 1, "always_eject_one_host: one, not two");
}

#[test]
fn a_server_returns_only_at_a_sweep_and_its_time_out_grows_with_each_ejection() {
    let t0 = Instant::now();
    let c = config("max_ejection_percent: 100%\ninterval: 10s\nbase_ejection_time: 15s");
    let mut d = Detector::new(c, 2, t0);
    let s = Duration::from_secs;
    answers(&mut d, 0, 500, 5, t0 + s(1));
    // Out 15 s from 1 s: due at 16 s, back at the 20 s sweep, not before.
    assert!(d.advance(t0 + s(19)).is_empty());
    assert!(d.is_ejected(0));
    assert_eq!(d.advance(t0 + s(20)), [(0, t0 + s(20))]);
    // Ejected again at once: 2 x 15 s = 30 s, from 20 s to 50 s.
    assert!(
        answers(&mut d, 0, 500, 5, t0 + s(20))
            .unwrap()
            .ends_with("30s")
    );
    assert!(d.advance(t0 + s(49)).is_empty());
    assert_eq!(d.advance(t0 + s(50)), [(0, t0 + s(50))]);
}

#[test]
fn the_backoff_wears_off_one_step_per_sweep_in_rotation() {
    let t0 = Instant::now();
    let c = config("max_ejection_percent: 100%\ninterval: 10s\nbase_ejection_time: 10s");
    let mut d = Detector::new(c, 1, t0);
    let s = Duration::from_secs;
    answers(&mut d, 0, 500, 5, t0 + s(5));
    d.advance(t0 + s(20)); // back at 20 s, backoff 1
    answers(&mut d, 0, 500, 5, t0 + s(20));
    d.advance(t0 + s(40)); // 20 s out, back at 40 s, backoff 2
    // Sweeps at 50 s and 60 s take it to 0; the next ejection is 10 s.
    d.advance(t0 + s(60));
    let why = answers(&mut d, 0, 500, 5, t0 + s(60)).unwrap();
    assert!(why.ends_with("out for at least 10s"), "{why}");
    // Without the two sweeps it would have been 30 s.
    let mut busy = Detector::new(d.config().clone(), 1, t0);
    answers(&mut busy, 0, 500, 5, t0 + s(5));
    busy.advance(t0 + s(20));
    answers(&mut busy, 0, 500, 5, t0 + s(20));
    busy.advance(t0 + s(40));
    let why = answers(&mut busy, 0, 500, 5, t0 + s(40)).unwrap();
    assert!(why.ends_with("out for at least 30s"), "{why}");
}

#[test]
fn the_ejection_time_stops_at_max_ejection_time() {
    let t0 = Instant::now();
    let c = config(
        "max_ejection_percent: 100%\ninterval: 1s\nbase_ejection_time: 10s\nmax_ejection_time: 25s",
    );
    let mut d = Detector::new(c, 1, t0);
    let (outs, _) = ejected_again_and_again(&mut d, 4, t0);
    assert_eq!(outs, ["10s", "20s", "25s", "25s"]);
}

#[test]
fn gateway_failures_eject_only_when_enforced_and_other_5xx_break_their_run() {
    let t0 = Instant::now();
    // Envoy's default: gateway failures are detected, never enforced.
    let mut off = Detector::new(
        config("max_ejection_percent: 100%\nconsecutive_5xx: 0"),
        1,
        t0,
    );
    assert_eq!(answers(&mut off, 0, 502, 50, t0), None);
    let c =
        config("max_ejection_percent: 100%\nconsecutive_5xx: 0\nconsecutive_gateway_failure: 3");
    let mut on = Detector::new(c, 1, t0);
    answers(&mut on, 0, 502, 2, t0);
    answers(&mut on, 0, 500, 1, t0); // a 500 is no gateway failure
    assert_eq!(answers(&mut on, 0, 504, 2, t0), None);
    let mut timeouts = on.clone();
    assert_eq!(
        on.on_answer(0, Answer::ConnectFailed, t0).as_deref(),
        Some("outlier: 3 gateway failures in a row, out for at least 30s")
    );
    assert!(timeouts.on_answer(0, Answer::Timeout, t0).is_some());
    // A reset after connecting counts for nothing.
    let mut resets = Detector::new(config("max_ejection_percent: 100%"), 1, t0);
    for _ in 0..10 {
        assert_eq!(resets.on_answer(0, Answer::Reset, t0), None);
    }
    answers(&mut resets, 0, 500, 4, t0);
    resets.on_answer(0, Answer::Reset, t0);
    assert!(
        answers(&mut resets, 0, 500, 1, t0).is_some(),
        "a reset does not end a run"
    );
}

#[test]
fn a_run_refused_by_the_cap_starts_again() {
    let t0 = Instant::now();
    let mut d = Detector::new(config("max_ejection_percent: 50%"), 2, t0);
    assert!(answers(&mut d, 0, 500, 5, t0).is_some());
    // b's fifth 5xx is refused (2 of 2 > 50 %) and its run starts again:
    // once a returns, b needs five more, not one.
    answers(&mut d, 1, 500, 5, t0);
    d.advance(t0 + Duration::from_secs(30));
    assert!(!d.is_ejected(0));
    assert_eq!(
        answers(&mut d, 1, 500, 4, t0 + Duration::from_secs(30)),
        None
    );
    assert!(answers(&mut d, 1, 500, 1, t0 + Duration::from_secs(30)).is_some());
}

#[test]
fn panic_starts_below_the_threshold_share_in_rotation() {
    let d = Detector::new(OutlierConfig::default(), 4, Instant::now());
    assert!(!d.in_panic(2), "2 of 4 is 50 %: no panic");
    assert!(d.in_panic(1));
    let never = Detector::new(config("panic_threshold: 0%"), 4, Instant::now());
    assert!(!never.in_panic(0));
}

#[test]
fn bad_settings_are_refused_with_the_key() {
    for (yaml, message) in [
        ("interval: 0s", "interval: must be longer than 0s"),
        (
            "base_ejection_time: 0s",
            "base_ejection_time: must be longer",
        ),
        (
            "base_ejection_time: 60s\nmax_ejection_time: 30s",
            "max_ejection_time: 30s is shorter than base_ejection_time 60s",
        ),
        ("max_ejection_percent: 120%", "invalid percentage"),
        ("consecutive_5xx: -1", "consecutive_5xx"),
        ("ejection: 1", "unknown field `ejection`"),
    ] {
        let err = crate::schema::from_yaml_str::<OutlierConfig>("o.yaml", yaml)
            .err()
            .unwrap_or_else(|| panic!("{yaml} accepted"))
            .to_string();
        assert!(err.contains(message), "{yaml}: {err}");
    }
    // max_ejection_time defaults to 300 s, or base_ejection_time if longer.
    assert_eq!(
        config("base_ejection_time: 400s").max_ejection_time,
        Duration::from_secs(400)
    );
    assert_eq!(OutlierConfig::default(), config("{}"));
}

#[test]
fn the_backoff_stops_growing_once_the_time_out_reaches_max_plus_base() {
    // Envoy grows the backoff while base x backoff < max + base: with a
    // 10 s base and a 20 s max it stops at 3 (30 s is not below 30 s), so
    // three sweeps in rotation wear it off and the next time out is 10 s
    // again (one step more, 4, would leave it at 1 and give 20 s).
    let t0 = Instant::now();
    let c = config(
        "max_ejection_percent: 100%\ninterval: 1s\nbase_ejection_time: 10s\nmax_ejection_time: 20s",
    );
    let mut d = Detector::new(c, 1, t0);
    let (outs, now) = ejected_again_and_again(&mut d, 4, t0);
    assert_eq!(outs, ["10s", "20s", "20s", "20s"]);
    let now = now + Duration::from_secs(3);
    let why = answers(&mut d, 0, 500, 5, now).unwrap();
    assert!(why.ends_with("out for at least 10s"), "{why}");
}
