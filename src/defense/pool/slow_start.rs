//! Slow start: a server that comes back gets a weight that ramps linearly
//! from almost nothing to its full weight, so a cold instance is not hit
//! with its whole share at once.

use crate::clock::Duration;

/// Units of weight per configured weight point: fine enough for a smooth
/// ramp with integer arithmetic.
pub const SCALE: u64 = 1000;

/// The effective weight (in [`SCALE`] units) of a server of `weight` that
/// came back `since` ago (`None`: never out, full weight) under
/// `slow_start` (zero: no ramp). Never below 1, so a returning server is
/// not starved forever.
pub fn effective_weight(weight: u32, since: Option<Duration>, slow_start: Duration) -> u64 {
    let full = u64::from(weight) * SCALE;
    match since {
        Some(elapsed) if elapsed < slow_start => {
            let share = full as u128 * elapsed.as_nanos() / slow_start.as_nanos();
            (share as u64).max(1)
        }
        _ => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAMP: Duration = Duration::from_secs(30);

    #[test]
    fn a_server_never_taken_out_has_its_full_weight() {
        assert_eq!(effective_weight(3, None, RAMP), 3 * SCALE);
    }

    #[test]
    fn the_weight_ramps_linearly_over_slow_start() {
        assert_eq!(effective_weight(2, Some(Duration::ZERO), RAMP), 1);
        assert_eq!(effective_weight(2, Some(Duration::from_secs(3)), RAMP), 200);
        assert_eq!(
            effective_weight(2, Some(Duration::from_secs(15)), RAMP),
            1000
        );
        assert_eq!(
            effective_weight(2, Some(Duration::from_millis(29_999)), RAMP),
            1999
        );
    }

    #[test]
    fn the_ramp_ends_at_full_weight_exactly_when_slow_start_has_passed() {
        assert_eq!(effective_weight(2, Some(RAMP), RAMP), 2 * SCALE);
        assert_eq!(effective_weight(2, Some(RAMP * 2), RAMP), 2 * SCALE);
    }

    #[test]
    fn without_slow_start_a_returning_server_gets_its_full_weight_at_once() {
        assert_eq!(
            effective_weight(4, Some(Duration::ZERO), Duration::ZERO),
            4 * SCALE
        );
    }
}
