//! Choosing a server: NGINX's smooth weighted round robin, and least
//! connections with round robin among the ties. Pure functions over the
//! servers eligible right now.

/// A server that may be chosen now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// Its index in the pool.
    pub index: usize,
    /// Its effective weight (slow start applied), at least 1.
    pub weight: u64,
    /// Calls it has in flight.
    pub in_flight: u64,
}

/// The state of smooth weighted round robin: one current weight per
/// server of the pool.
#[derive(Debug, Clone)]
pub struct RoundRobin {
    /// Current weight of each server, by index.
    current: Vec<i128>,
}

impl RoundRobin {
    /// State for a pool of `servers` servers.
    pub fn new(servers: usize) -> RoundRobin {
        RoundRobin {
            current: vec![0; servers],
        }
    }

    /// NGINX's smooth weighted round robin: every candidate's current
    /// weight grows by its weight, the largest wins (the first on a tie)
    /// and loses the total. Weights 5, 1, 1 give `a a b a c a a`.
    pub fn pick(&mut self, candidates: &[Candidate]) -> Option<usize> {
        let mut total: i128 = 0;
        let mut best: Option<usize> = None;
        for c in candidates {
            let weight = i128::from(c.weight);
            self.current[c.index] += weight;
            total += weight;
            if best.is_none_or(|b| self.current[c.index] > self.current[b]) {
                best = Some(c.index);
            }
        }
        let best = best?;
        self.current[best] -= total;
        Some(best)
    }

    /// Least connections: the fewest calls in flight for its weight; among
    /// equals, smooth weighted round robin.
    pub fn least_conn(&mut self, candidates: &[Candidate]) -> Option<usize> {
        // a.in_flight / a.weight < b.in_flight / b.weight, without division.
        let load = |c: &Candidate| u128::from(c.in_flight);
        let fewer = |a: &Candidate, b: &Candidate| {
            load(a) * u128::from(b.weight) < load(b) * u128::from(a.weight)
        };
        let least = candidates
            .iter()
            .fold(None::<&Candidate>, |best, c| match best {
                Some(b) if !fewer(c, b) => Some(b),
                _ => Some(c),
            })?;
        let tied: Vec<Candidate> = candidates
            .iter()
            .filter(|c| !fewer(least, c))
            .copied()
            .collect();
        self.pick(&tied)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidates(weights: &[u64]) -> Vec<Candidate> {
        weights
            .iter()
            .enumerate()
            .map(|(index, &weight)| Candidate {
                index,
                weight,
                in_flight: 0,
            })
            .collect()
    }

    fn sequence(rr: &mut RoundRobin, candidates: &[Candidate], n: usize) -> String {
        (0..n)
            .map(|_| (b'a' + rr.pick(candidates).unwrap() as u8) as char)
            .collect()
    }

    #[test]
    fn smooth_round_robin_with_weights_5_1_1_gives_nginx_sequence() {
        let servers = candidates(&[5, 1, 1]);
        let mut rr = RoundRobin::new(3);
        assert_eq!(sequence(&mut rr, &servers, 7), "aabacaa");
        assert_eq!(sequence(&mut rr, &servers, 7), "aabacaa");
    }

    #[test]
    fn equal_weights_take_turns() {
        let servers = candidates(&[1, 1, 1]);
        let mut rr = RoundRobin::new(3);
        assert_eq!(sequence(&mut rr, &servers, 6), "abcabc");
    }

    #[test]
    fn round_robin_skips_servers_that_are_not_candidates() {
        let servers = candidates(&[1, 1, 1]);
        let mut rr = RoundRobin::new(3);
        let without_b = [servers[0], servers[2]];
        assert_eq!(sequence(&mut rr, &without_b, 4), "acac");
    }

    #[test]
    fn no_candidate_gives_no_server() {
        assert_eq!(RoundRobin::new(2).pick(&[]), None);
        assert_eq!(RoundRobin::new(2).least_conn(&[]), None);
    }

    #[test]
    fn least_conn_picks_the_server_with_fewest_calls_in_flight() {
        let mut servers = candidates(&[1, 1, 1]);
        servers[0].in_flight = 2;
        servers[1].in_flight = 0;
        servers[2].in_flight = 1;
        let mut rr = RoundRobin::new(3);
        assert_eq!(rr.least_conn(&servers), Some(1));
        servers[1].in_flight = 3;
        assert_eq!(rr.least_conn(&servers), Some(2));
    }

    #[test]
    fn least_conn_divides_calls_in_flight_by_weight() {
        // a: 4 calls at weight 4 (1 per point) beats b: 2 calls at weight 1.
        let mut servers = candidates(&[4, 1]);
        servers[0].in_flight = 4;
        servers[1].in_flight = 2;
        let mut rr = RoundRobin::new(2);
        assert_eq!(rr.least_conn(&servers), Some(0));
        // 3 calls at weight 1 against 12 at weight 4: equal load, a tie.
        servers[0].in_flight = 12;
        servers[1].in_flight = 3;
        let picks: Vec<_> = (0..5).map(|_| rr.least_conn(&servers).unwrap()).collect();
        assert_eq!(picks, [0, 0, 1, 0, 0]);
    }

    #[test]
    fn least_conn_ties_go_round_robin() {
        let mut servers = candidates(&[1, 1, 1]);
        servers[2].in_flight = 1;
        let mut rr = RoundRobin::new(3);
        let picks: Vec<_> = (0..4).map(|_| rr.least_conn(&servers).unwrap()).collect();
        assert_eq!(picks, [0, 1, 0, 1]);
    }
}
