//! A pool's tracks: one health band per server (not in rotation yet, in
//! rotation, ramping in slow start, ejected) with a mark at each change
//! that says what decided it, then the share of calls each server answered
//! per bucket, with the spans when no server was in rotation named for
//! what they are.

use std::fmt::Write;

use super::super::picture::{Picture, PoolFacts, health_segments, no_server_spans};
use super::format::row;
use super::format::{Axis, esc, time};

/// The CSS class of the `i`th server's share (six colours, then again).
pub(super) fn server_class(i: usize) -> String {
    format!("server-{}", i % 6 + 1)
}

/// Every pool's tracks.
pub(super) fn pool_rows(h: &mut String, p: &Picture, axis: &Axis) {
    for pool in &p.facts.pools {
        for server in &pool.servers {
            let end = p.facts.duration_ms;
            let mut band = String::new();
            for (a, b, state) in health_segments(pool, server, end) {
                let _ = write!(
                    band,
                    "<rect class=\"health {}\" x=\"{}\" width=\"{}\" y=\"0\" height=\"100%\">\
                     <title>{} {} from {} to {}</title></rect>\
                     <text class=\"seg\" x=\"{}\" dx=\"4\" y=\"15\">{}</text>",
                    state.class(),
                    axis.pct(a),
                    axis.width(a, b),
                    esc(&server.name),
                    state.label(),
                    time(a),
                    time(b),
                    axis.pct(a),
                    state.label()
                );
            }
            for c in server.changes.iter().filter(|c| c.at_ms < end) {
                let _ = write!(
                    band,
                    "<g class=\"transition\"><title>{} {} {}: {}</title>\
                     <rect class=\"mark\" x=\"{x}\" width=\"2\" transform=\"translate(-1,0)\" y=\"0\" height=\"100%\"/>\
                     <rect class=\"hit\" x=\"{x}\" width=\"10\" transform=\"translate(-5,0)\" y=\"0\" height=\"100%\"/></g>",
                    time(c.at_ms),
                    esc(&server.name),
                    if c.healthy { "in rotation" } else { "ejected" },
                    esc(&c.by),
                    x = axis.pct(c.at_ms),
                );
            }
            let backup = if server.backup { ", backup" } else { "" };
            row(
                h,
                "health-row",
                &format!("instance {}", server.name),
                &format!("pool {} health{backup}", pool.name),
                22,
                &band,
            );
        }
        share_row(h, p, pool, axis);
    }
}

/// The share of calls each server of `pool` answered per bucket, stacked
/// to 100 %, and the spans when none was in rotation.
fn share_row(h: &mut String, p: &Picture, pool: &PoolFacts, axis: &Axis) {
    let tracks: Vec<(usize, &[u32])> = pool
        .servers
        .iter()
        .enumerate()
        .filter_map(|(i, s)| {
            p.servers
                .iter()
                .find(|t| t.pool == pool.name && t.server == s.name)
                .map(|t| (i, t.buckets.as_slice()))
        })
        .collect();
    let mut bars = String::new();
    let buckets = tracks.first().map_or(0, |(_, b)| b.len());
    for bucket in 0..buckets {
        let Some((at, end)) = p.bucket_span(bucket) else {
            continue;
        };
        let total: u32 = tracks.iter().map(|(_, b)| b[bucket]).sum();
        if total == 0 {
            continue;
        }
        let each: Vec<String> = tracks
            .iter()
            .map(|(i, b)| {
                let n = b[bucket];
                let share = f64::from(n) / f64::from(total) * 100.0;
                format!("{} {share:.0}% ({n})", pool.servers[*i].name)
            })
            .collect();
        let _ = write!(
            bars,
            "<g><title>{}–{}: {}</title>",
            time(at),
            time(end),
            esc(&each.join(", "))
        );
        let mut y = 100.0;
        for (i, b) in &tracks {
            let height = f64::from(b[bucket]) / f64::from(total) * 100.0;
            if height == 0.0 {
                continue;
            }
            y -= height;
            let _ = write!(
                bars,
                "<rect class=\"share {}\" x=\"{}\" width=\"{}\" y=\"{y:.2}%\" height=\"{height:.2}%\"/>",
                server_class(*i),
                axis.pct(at),
                axis.width(at, end),
            );
        }
        bars.push_str("</g>");
    }
    for (a, b, first) in no_server_spans(pool, p.facts.duration_ms) {
        let what = if first {
            "no server in rotation yet: before the first health check passes"
        } else {
            "no server in rotation: every server ejected"
        };
        let _ = write!(
            bars,
            "<rect class=\"no-server-span\" x=\"{}\" width=\"{}\" y=\"0\" height=\"100%\">\
             <title>{}–{}: {what}</title></rect>\
             <text class=\"note\" x=\"{}\" dx=\"6\" y=\"14\">← {what} ({}–{})</text>",
            axis.pct(a),
            axis.width(a, b),
            time(a),
            time(b),
            axis.pct(b),
            time(a),
            time(b)
        );
    }
    let names: Vec<&str> = pool.servers.iter().map(|s| s.name.as_str()).collect();
    row(
        h,
        "share-row",
        &format!("pool {}", pool.name),
        &format!(
            "share of calls per server ({}) per {}",
            names.join(", "),
            time(p.bucket_ms)
        ),
        60,
        &bars,
    );
}
