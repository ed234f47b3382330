//! Where Toxiproxy's `slicer` cuts a chunk (toxics/slicer.go), as a pure
//! function of the chunk's length and the fault's random draws.

/// The end offset of every slice of a chunk of `len` bytes, in order.
///
/// A chunk no longer than `average + variation` is one slice; a longer one
/// is cut at its middle, moved by a whole number drawn uniformly from
/// `-variation..variation`, and each half is sliced the same way. So slices
/// fall between about half of `average` and `average + variation` bytes
/// (Toxiproxy's, not `average` each). `draw` gives uniform numbers in
/// `[0, 1)`; it is called only when `variation` is not zero. `variation`
/// below `average` (checked when the fault is read) keeps every slice at
/// least one byte long.
pub(super) fn slice_ends(
    len: usize,
    average: usize,
    variation: usize,
    draw: &mut impl FnMut() -> f64,
) -> Vec<usize> {
    let mut ends = Vec::new();
    cut(0, len, average, variation, draw, &mut ends);
    ends
}

fn cut(
    start: usize,
    end: usize,
    average: usize,
    variation: usize,
    draw: &mut impl FnMut() -> f64,
    ends: &mut Vec<usize>,
) {
    // Saturating: sizes near usize::MAX must not wrap into tiny slices.
    if end - start <= average.saturating_add(variation) {
        ends.push(end);
        return;
    }
    let mut mid = start + (end - start) / 2;
    if variation > 0 {
        let offset = (draw() * variation.saturating_mul(2) as f64) as usize;
        mid = mid.saturating_add(offset).saturating_sub(variation);
    }
    // Every cut strictly inside the chunk, so each half is shorter and the
    // recursion ends whatever the parameters (variation below average
    // keeps it there already).
    let mid = mid.clamp(start + 1, end - 1);
    cut(start, mid, average, variation, draw, ends);
    cut(mid, end, average, variation, draw, ends);
}

#[cfg(test)]
mod tests {
    use super::slice_ends;

    fn sizes(ends: &[usize]) -> Vec<usize> {
        let mut start = 0;
        ends.iter()
            .map(|&end| {
                let size = end - start;
                start = end;
                size
            })
            .collect()
    }

    #[test]
    fn without_variation_a_chunk_is_halved_until_no_piece_exceeds_the_average() {
        // Toxiproxy's slicer cuts 100 bytes at 50, 25, 12/18 ... : sixteen
        // slices of 6 and 7 bytes for an average of 10.
        let ends = slice_ends(100, 10, 0, &mut || {
            unreachable!("no draw without variation")
        });
        assert_eq!(sizes(&ends), [6, 6, 6, 7].repeat(4));
        assert_eq!(slice_ends(10, 10, 0, &mut || 0.0), [10]);
        assert_eq!(slice_ends(0, 10, 0, &mut || 0.0), [0]);
    }

    #[test]
    fn variation_moves_each_cut_within_minus_to_plus_variation_and_loses_no_byte() {
        // The lowest draw moves each cut `variation` bytes left: 30 is cut
        // at 15 - 5, its right part (20 bytes) at 10 + 10 - 5.
        assert_eq!(sizes(&slice_ends(30, 10, 5, &mut || 0.0)), [10, 5, 15]);
        for draw in [0.0, 0.3, 0.999] {
            let ends = slice_ends(1000, 10, 9, &mut || draw);
            assert_eq!(ends.last(), Some(&1000));
            assert!(
                sizes(&ends).iter().all(|&s| (1..=19).contains(&s)),
                "{draw}"
            );
        }
    }

    #[test]
    fn sizes_at_the_top_of_the_range_neither_wrap_nor_lose_a_byte() {
        // average + variation and 2 * variation beyond usize: a chunk is
        // one slice, as it is no longer than either.
        for (average, variation) in [
            (usize::MAX, usize::MAX - 1),
            (usize::MAX / 2 + 1, usize::MAX / 2),
            (usize::MAX, 1),
        ] {
            for draw in [0.0, 0.5, 0.999] {
                assert_eq!(slice_ends(100, average, variation, &mut || draw), [100]);
            }
        }
        // A huge variation under a chunk still cuts inside it.
        for draw in [0.0, 0.5, 0.999] {
            let ends = slice_ends(1000, 3, 2, &mut || draw);
            assert_eq!(ends.last(), Some(&1000));
            assert!(ends.windows(2).all(|w| w[0] < w[1]), "{draw}: {ends:?}");
        }
    }
}
