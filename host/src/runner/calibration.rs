//! Recorded usage against the replayed context.
//!
//! A transcript's usage counts what the original run sent: the agent's own system prompt and tool
//! schemas, which no transcript holds, in the model's tokenizer. While the replayed context is the
//! original one, the engine is given that usage as it was recorded. Once it is not (the engine
//! under test compacted it), the recorded figure describes a context the model no longer sees:
//! passed on, it kept the engine over its threshold at every turn after its first compaction, and
//! the engine paused as if its compactions did nothing. From then on the engine is given the
//! replayed context's own count, calibrated by the calls before: recorded ≈ a × counted + b, fitted
//! by least squares (a: the model's tokenizer against the host's counter; b: what the agent sent
//! that the transcript lacks).

/// The calls whose usage was recorded while the context was the original one.
#[derive(Clone, Debug, Default)]
pub(super) struct Calibration {
    calls: f64,
    counted: f64,
    recorded: f64,
    counted_squared: f64,
    products: f64,
}

/// Tokenizers differ from the host's counters by far less than this, either way: a fit beyond it
/// has been thrown by a few calls, and only the tokens the transcript lacks are added instead.
const SCALE_RANGE: std::ops::RangeInclusive<f64> = 0.5..=2.0;

impl Calibration {
    /// A call of the original context: `counted` by the host, `recorded` by the transcript.
    pub(super) fn add(&mut self, counted: u64, recorded: u64) {
        let (x, y) = (counted as f64, recorded as f64);
        self.calls += 1.0;
        self.counted += x;
        self.recorded += y;
        self.counted_squared += x * x;
        self.products += x * y;
    }

    /// The prompt a context `counted` by the host would have cost in the original run.
    pub(super) fn apply(&self, counted: u64) -> u64 {
        if self.calls == 0.0 {
            return counted;
        }
        let (mean_x, mean_y) = (self.counted / self.calls, self.recorded / self.calls);
        let variance = self.counted_squared / self.calls - mean_x * mean_x;
        let fitted = (variance > 1.0).then(|| {
            let scale = (self.products / self.calls - mean_x * mean_y) / variance;
            (scale, mean_y - scale * mean_x)
        });
        // One call, or calls of one size, or a fit out of range: what the original sent beyond
        // the transcript's messages, as a fixed number of tokens.
        let (scale, extra) = match fitted {
            Some((scale, extra)) if SCALE_RANGE.contains(&scale) && extra >= 0.0 => (scale, extra),
            _ => (1.0, (mean_y - mean_x).max(0.0)),
        };
        (scale * counted as f64 + extra).round().max(0.0) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_context_is_costed_as_the_original_run_would_have_counted_it() {
        let mut calibration = Calibration::default();
        assert_eq!(calibration.apply(1_000), 1_000);
        // A 3,000-token system prompt the transcript lacks, and a tokenizer counting 10% more.
        for counted in [2_000, 5_000, 9_000, 14_000] {
            calibration.add(counted, 3_000 + counted * 11 / 10);
        }
        assert_eq!(calibration.apply(1_500), 3_000 + 1_650);
        // One call: the difference is what the original sent besides.
        let mut one = Calibration::default();
        one.add(4_000, 19_000);
        assert_eq!(one.apply(1_000), 16_000);
        // Recorded below the count (a tokenizer counting less): never below zero extra.
        let mut less = Calibration::default();
        less.add(4_000, 3_500);
        assert_eq!(less.apply(1_000), 1_000);
    }
}
