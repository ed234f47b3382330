use super::*;
use crate::defense::breaker::Reason;

fn moment() -> Moment {
    Moment {
        name: "drill".into(),
        elapsed: Duration::from_millis(12_300),
        total: Duration::from_secs(60),
        active: vec!["stock-down".into()],
        interval: 1,
        routes: vec![RouteCounts {
            name: "shop".into(),
            counts: Counts {
                requests: 140,
                success: 118,
                fallback: 20,
                errors: 22,
                rejected: 18,
                timeouts: 2,
            },
            last: Interval {
                rate: 20.0,
                p50: Some(Duration::from_millis(20)),
                p99: Some(Duration::from_millis(500)),
            },
        }],
        pools: vec![PoolState {
            name: "inventory".into(),
            servers: vec![("a".into(), true), ("b".into(), false), ("c".into(), true)],
        }],
        breakers: vec![(
            "stock".into(),
            State::Open,
            Some(Transition {
                at: Duration::from_millis(10_500),
                breaker: "stock".into(),
                from: State::Closed,
                to: State::Open,
                reason: Reason::Manual {
                    action: "force_open",
                },
            }),
        )],
    }
}

#[test]
fn the_panel_shows_counts_errors_the_last_interval_pools_and_the_last_transition() {
    let lines = moment().panel(false, WIDTH);
    assert_eq!(lines[0], "drill  12.3s / 60.0s (20%)  active: stock-down");
    assert_eq!(
        lines[1],
        "  route    requests   success  fallback    errors  rejected  timeouts"
    );
    assert_eq!(
        lines[2],
        "  shop          140       118        20        22        18         2"
    );
    assert_eq!(lines[3], "  last 1s     req/s       p50       p99");
    assert_eq!(lines[4], "  shop         20.0    20.0ms   500.0ms");
    assert_eq!(lines[5], "  pool inventory: 2 of 3 in rotation (out: b)");
    assert!(
        lines[6].starts_with("  breaker stock: open  last: closed -> open at 10.5s ("),
        "{}",
        lines[6]
    );
}

#[test]
fn the_panel_says_so_when_every_server_is_in_rotation_and_when_no_answer_came() {
    let mut m = moment();
    m.pools[0].servers[1].1 = true;
    m.routes[0].last = Interval::default();
    let lines = m.panel(false, WIDTH);
    assert_eq!(lines[4], "  shop          0.0         -         -");
    assert_eq!(lines[5], "  pool inventory: 3 of 3 in rotation");
}

#[test]
fn no_panel_line_is_wider_than_80_columns_whatever_the_names() {
    let mut m = moment();
    m.name = "a drill whose name alone is longer than the terminal is wide, by far".into();
    m.active = vec!["a-fault-with-a-long-name".into(); 4];
    m.routes[0].name = "a-route-name-far-too-long-for-a-column".into();
    m.routes[0].counts.requests = 99_999_999;
    m.pools[0].name = "p".repeat(90);
    m.breakers[0].0 = "b".repeat(40);
    for colour in [false, true] {
        for line in m.panel(colour, 0) {
            let plain = line.replace("\x1b[31;1m", "").replace("\x1b[0m", "");
            assert!(
                plain.chars().count() <= WIDTH,
                "{} wide: {plain}",
                plain.chars().count()
            );
        }
    }
    let lines = m.panel(false, WIDTH);
    assert!(lines[0].ends_with('…'), "{}", lines[0]);
    assert!(lines[2].starts_with("  a-route-name-fa… "), "{}", lines[2]);
}

#[test]
fn a_wide_terminal_gets_wide_lines_and_a_narrow_one_still_gets_80_columns() {
    let mut m = moment();
    m.name = "checkout keeps answering while the inventory service is down".into();
    m.active = vec!["inventory-down".into(), "payments-slow".into()];
    m.routes[0].name = "checkout-with-a-long-route-name".into();
    let wide = m.panel(false, 200);
    assert!(
        wide[0].ends_with("active: inventory-down, payments-slow"),
        "the name and every active fault whole: {}",
        wide[0]
    );
    assert!(
        wide[2].starts_with("  checkout-with-a-long-route-name "),
        "{}",
        wide[2]
    );
    assert!(wide.iter().all(|l| l.chars().count() <= 200));
    for narrow in [0, 40, 80] {
        let lines = m.panel(false, narrow);
        assert!(
            lines.iter().all(|l| l.chars().count() <= WIDTH),
            "{lines:#?}"
        );
        assert!(lines[0].ends_with('…'), "{}", lines[0]);
    }
}

#[test]
fn a_line_that_fits_is_left_whole() {
    assert_eq!(fit_to("abc", 3), "abc");
    assert_eq!(fit_to("abcd", 3), "ab…");
}

#[test]
fn colour_marks_the_state_only_when_asked() {
    let coloured = moment().panel(true, WIDTH).join("\n");
    assert!(coloured.contains("  breaker stock: \x1b[31;1mopen\x1b[0m  last: closed"));
    assert!(!moment().panel(false, WIDTH).join("\n").contains('\x1b'));
}

#[test]
fn the_heartbeat_is_one_line_with_the_same_words_and_figures() {
    let line = moment().heartbeat();
    assert_eq!(
        line,
        "[firedrill] 12.3s / 60.0s (20%)  active: stock-down  shop: requests 140 success 118 \
         fallback 20 errors 22 rejected 18 timeouts 2, last 1s 20.0 req/s p50 20.0ms p99 500.0ms  \
         pool inventory: 2 of 3 in rotation (out: b)  breaker stock: open since 10.5s"
    );
}

#[test]
fn the_percentage_of_a_run_of_no_length_is_100() {
    let mut m = moment();
    m.total = Duration::ZERO;
    assert!(
        m.panel(false, WIDTH)[0].contains("(100%)"),
        "{}",
        m.panel(false, WIDTH)[0]
    );
}
