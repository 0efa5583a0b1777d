//! When to stop trying: the anti-thrash pause of automatic compaction, and the summarizer's
//! cool-down after a failure or a timeout.
//!
//! Hermes's version of the pause never re-opened and its users had to restart; here it lifts by
//! itself (see [`AntiThrash`]).

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Consecutive ineffective compactions that pause automatic compaction.
pub const INEFFECTIVE_LIMIT: u32 = 2;

/// Pauses automatic compaction after [`INEFFECTIVE_LIMIT`] ineffective compactions in a row.
///
/// - A compaction that replaced the context is judged by the next reported prompt: still at or
///   over the threshold means ineffective; under it means effective.
/// - An attempt that changed nothing (nothing to compress, aborted) is ineffective at once.
/// - The pause lifts when a reported prompt fits under the threshold, on a session reset, a model
///   switch, or an explicit resume (the host's manual `/compress`).
/// - It lifts for one more try when the prompt has grown by a quarter of the threshold since the
///   pause: what came since is a middle a compaction can free. A prompt the engine can never bring
///   under its threshold (a system prompt and tools close to it) otherwise grew until it was over
///   the window; so the prompt stays within about that quarter of the smallest context the engine
///   can leave. One more ineffective try pauses again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AntiThrash {
    streak: u32,
    awaiting_verdict: bool,
    paused: bool,
    /// The latest prompt reported, and the one reported when the pause began (0: none yet).
    last_prompt: u64,
    paused_at: u64,
    /// A pause was warned about: the next ones are said at `info`, once a session pauses and
    /// resumes twenty times (a prompt the engine cannot bring under its threshold).
    warned: bool,
}

impl AntiThrash {
    /// Whether automatic compaction is paused.
    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Ineffective compactions in a row so far.
    pub fn streak(&self) -> u32 {
        self.streak
    }

    /// After a compaction that replaced the context: the next prompt decides.
    pub fn on_compacted(&mut self) {
        self.awaiting_verdict = true;
    }

    /// After an attempt that changed nothing.
    pub fn on_ineffective(&mut self) {
        self.awaiting_verdict = false;
        self.count_ineffective();
    }

    /// A prompt size reported by the model, against the threshold (0: unknown, ignored).
    pub fn on_prompt(&mut self, prompt_tokens: u64, threshold_tokens: u64) {
        if threshold_tokens == 0 {
            return;
        }
        self.last_prompt = prompt_tokens;
        if prompt_tokens < threshold_tokens {
            if self.paused {
                tracing::info!("automatic compaction resumed: the prompt ({prompt_tokens} tokens) fits under the threshold");
            }
            self.reset();
        } else if std::mem::take(&mut self.awaiting_verdict) {
            self.count_ineffective();
        } else if self.paused
            && self.paused_at > 0
            && prompt_tokens >= self.paused_at + (threshold_tokens / 4).max(1)
        {
            tracing::info!(
                "automatic compaction resumed for one try: the prompt grew from {} to {prompt_tokens} tokens since the pause",
                self.paused_at
            );
            self.paused = false;
            self.paused_at = 0;
            self.streak = INEFFECTIVE_LIMIT - 1;
        }
    }

    /// `update_from_response` for an engine that paces itself so: the usage into its counters,
    /// and the prompt's size weighed against its threshold ([`Self::on_prompt`]).
    pub fn on_usage(
        &mut self,
        counters: &mut ctxhost_engine_abi::Counters,
        usage: &ctxhost_engine_abi::Usage,
    ) {
        counters.last_prompt_tokens = usage.prompt_tokens;
        counters.last_completion_tokens = usage.completion_tokens;
        counters.last_total_tokens = usage.total_tokens;
        self.on_prompt(usage.prompt_tokens, counters.threshold_tokens);
    }

    /// Lifts the pause and forgets the streak.
    pub fn resume(&mut self) -> bool {
        let was_paused = self.paused;
        self.reset();
        was_paused
    }

    /// No streak and no pause; whether a pause was warned about is remembered.
    fn reset(&mut self) {
        *self = Self {
            warned: self.warned,
            ..Self::default()
        };
    }

    fn count_ineffective(&mut self) {
        self.streak += 1;
        if self.streak >= INEFFECTIVE_LIMIT && !self.paused {
            self.paused = true;
            self.paused_at = self.last_prompt;
            if std::mem::replace(&mut self.warned, true) {
                tracing::info!(
                    "automatic compaction paused again after {} ineffective compactions in a row",
                    self.streak
                );
            } else {
                tracing::warn!(
                    "automatic compaction paused after {} ineffective compactions in a row; it resumes when a prompt fits under the threshold, for one more try when the prompt has grown by a quarter of the threshold, on /new or /reset, a model switch, or a manual /compress (said once; -v shows each pause)",
                    self.streak
                );
            }
        }
    }
}

/// How the message of an `UNAVAILABLE` error from the host's `summarize` service starts when the
/// model did not answer in time (the host writes it; an engine cools down on it).
pub const TIMED_OUT: &str = "timed out";

/// Cool-down steps after consecutive summarizer timeouts; any other failure waits the first.
pub const COOLDOWN_STEPS: [Duration; 3] = [
    Duration::from_secs(60),
    Duration::from_secs(300),
    Duration::from_secs(900),
];

/// What went wrong with the summarizer, for the cool-down.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// It did not answer in time (the compaction aborted).
    Timeout,
    /// It answered, uselessly (the fallback summary was used).
    Failed,
}

/// How long to leave the summarizer alone (compressor.md, "Failure and anti-thrash rules"):
///
/// - after a failure: 60 s;
/// - after a timeout: 60 s, then 300 s after a second timeout in a row, then 900 s after every
///   further one. A timeout costs the agent the whole timeout, so a slow endpoint is asked less
///   and less often; a failure answers fast and is retried at the first step;
/// - a success, or an answer that failed (the endpoint is answering again), ends the run of
///   timeouts.
///
/// While it lasts the summarizer is not asked and compactions use the fallback summary.
#[derive(Clone, Debug, Default)]
pub struct Cooldown {
    until: Option<Instant>,
    timeouts: usize,
    reason: Option<String>,
}

impl Cooldown {
    /// Whether the summarizer should be left alone at `now`.
    pub fn is_active(&self, now: Instant) -> bool {
        self.until.is_some_and(|until| now < until)
    }

    /// Why the summarizer last failed.
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// Records a failure or a timeout at `now` and starts its cool-down, which it returns.
    pub fn on_failure(&mut self, now: Instant, reason: &str, kind: FailureKind) -> Duration {
        let step = match kind {
            FailureKind::Timeout => {
                self.timeouts += 1;
                COOLDOWN_STEPS[(self.timeouts - 1).min(COOLDOWN_STEPS.len() - 1)]
            }
            FailureKind::Failed => {
                self.timeouts = 0;
                COOLDOWN_STEPS[0]
            }
        };
        self.until = Some(now + step);
        self.reason = Some(reason.to_owned());
        step
    }

    /// Records a success: the next failure starts at the first step again.
    pub fn on_success(&mut self) {
        *self = Self::default();
    }

    /// Seconds left at `now`, 0 when not cooling down.
    pub fn remaining_secs(&self, now: Instant) -> u64 {
        self.until.map_or(0, |until| {
            until.saturating_duration_since(now).as_secs_f64().ceil() as u64
        })
    }

    /// The end of the cool-down as Unix seconds, for display.
    pub fn until_unix_secs(&self, now: Instant) -> Option<u64> {
        self.is_active(now).then(|| {
            let wall = SystemTime::now() + Duration::from_secs(self.remaining_secs(now));
            wall.duration_since(UNIX_EPOCH).map_or(0, |since| since.as_secs())
        })
    }

    /// Ends the cool-down now, as if its time had passed; the run of timeouts is remembered.
    /// For tests, which must not wait minutes (an engine's clock is `Instant::now`).
    pub fn expire(&mut self) {
        self.until = Some(Instant::now() - Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_ineffective_compactions_pause_and_a_fitting_prompt_resumes() {
        let mut thrash = AntiThrash::default();
        thrash.on_compacted();
        thrash.on_prompt(/*prompt_tokens*/ 120, /*threshold_tokens*/ 100);
        assert!(!thrash.is_paused());
        thrash.on_ineffective();
        assert!(thrash.is_paused());
        thrash.on_prompt(140, 100);
        assert!(
            thrash.is_paused(),
            "a prompt still over the threshold, grown by less than a quarter of it, keeps the pause"
        );
        thrash.on_prompt(80, 100);
        assert!(!thrash.is_paused());
        assert_eq!(thrash.streak(), 0);
    }

    /// A session that pauses and resumes all along (a prompt the engine is told over its
    /// threshold now and then) warns of the first pause only: twenty identical warnings were
    /// printed in one replay.
    #[test]
    fn the_first_pause_is_warned_and_later_ones_are_not() {
        use std::sync::{Arc, Mutex};
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
                self.0.lock().unwrap().extend_from_slice(bytes);
                Ok(bytes.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let writer = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            let mut thrash = AntiThrash::default();
            for _ in 0..3 {
                thrash.on_ineffective();
                thrash.on_ineffective();
                assert!(thrash.is_paused());
                thrash.on_prompt(80, 100);
                assert!(!thrash.is_paused());
            }
        });
        let written = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
        assert_eq!(
            written.matches("automatic compaction paused").count(),
            1,
            "{written}"
        );
    }

    /// A prompt the engine cannot bring under its threshold (overhead close to it) is tried again
    /// as it grows, not left to grow over the window (verify16: a Claude Code log at 8k paused at
    /// message 14 for good, and 26 model calls went over the window).
    #[test]
    fn a_paused_prompt_that_grew_a_quarter_of_the_threshold_is_tried_once_more() {
        let mut thrash = AntiThrash::default();
        thrash.on_compacted();
        thrash.on_prompt(4_500, 4_000);
        thrash.on_ineffective();
        assert!(thrash.is_paused());
        thrash.on_prompt(5_400, 4_000);
        assert!(
            thrash.is_paused(),
            "900 tokens more is under a quarter of the threshold"
        );
        thrash.on_prompt(5_500, 4_000);
        assert!(!thrash.is_paused(), "1,000 tokens more is a quarter");
        // The try freed something but not enough: paused again, from the new prompt.
        thrash.on_compacted();
        thrash.on_prompt(4_600, 4_000);
        assert!(thrash.is_paused());
        thrash.on_prompt(5_500, 4_000);
        assert!(thrash.is_paused());
        thrash.on_prompt(5_600, 4_000);
        assert!(!thrash.is_paused());
        // An attempt that changed nothing pauses again at once too.
        thrash.on_ineffective();
        assert!(thrash.is_paused());
    }

    #[test]
    fn an_effective_compaction_breaks_the_streak() {
        let mut thrash = AntiThrash::default();
        thrash.on_ineffective();
        thrash.on_compacted();
        thrash.on_prompt(50, 100);
        thrash.on_ineffective();
        assert!(!thrash.is_paused());
    }

    #[test]
    fn the_cooldown_grows_60_300_900_on_repeated_timeouts() {
        let now = Instant::now();
        let mut cooldown = Cooldown::default();
        let steps: Vec<u64> = (0..4)
            .map(|_| {
                cooldown
                    .on_failure(now, "timed out", FailureKind::Timeout)
                    .as_secs()
            })
            .collect();
        assert_eq!(steps, vec![60, 300, 900, 900]);
        assert!(cooldown.is_active(now));
        assert_eq!(cooldown.remaining_secs(now), 900);
        cooldown.on_success();
        assert!(!cooldown.is_active(now));
        assert_eq!(
            cooldown.on_failure(now, "again", FailureKind::Timeout).as_secs(),
            60
        );
    }

    #[test]
    fn a_failure_waits_60_s_each_time_and_ends_a_run_of_timeouts() {
        let now = Instant::now();
        let mut cooldown = Cooldown::default();
        let mut step = |kind| cooldown.on_failure(now, "x", kind).as_secs();
        assert_eq!(step(FailureKind::Failed), 60);
        assert_eq!(step(FailureKind::Failed), 60);
        assert_eq!(step(FailureKind::Timeout), 60);
        assert_eq!(step(FailureKind::Timeout), 300);
        assert_eq!(step(FailureKind::Failed), 60);
        assert_eq!(step(FailureKind::Timeout), 60);
    }
}
