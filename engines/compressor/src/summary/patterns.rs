//! The words and markers the extractive summarizer looks for, compiled once: error lines,
//! constraints the user states, decisions the assistant states, code spans.

use std::{borrow::Cow, sync::LazyLock};

use aho_corasick::{AhoCorasick, Input, MatchKind};
use regex::Regex;

use super::facts::{cut_at, cut_at_token, DecisionRecord, FactKind, Facts, Sentence, Source};
use ctxhost_engine_kit::{
    retention::{
        first_error_line, is_diff_line, is_ticket_key, numbers_a_step, query_result_rows, reports_no_error,
    },
    text::{
        ceil_char_boundary, floor_char_boundary, is_json_document, with_partition_prefix, within_json_string,
    },
};

use crate::{
    identify::{bracketed_four_part_version, with_package_name},
    prune::is_cut_marker,
    scan::{classify_token, for_each_token, line_around, sentence_around},
};

/// Markers of an error line, matched leftmost-first as literals (an automaton builds in
/// microseconds; the equivalent regex took a third of a first compaction to compile).
static ERROR_MARKERS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build([
            "error",
            "Error",
            "ERROR",
            "Exception",
            "exception",
            "Traceback",
            "FAILED",
            "FAIL:",
            // Jest's `FAIL src/cart.test.ts`, npm's `npm ERR! code ELIFECYCLE`.
            "FAIL ",
            "ERR!",
            // logrus's levels, as k6 and Docker print them: `ERRO[0901] thresholds … crossed`.
            "ERRO[",
            "FATA[",
            "failed",
            "Failed",
            "failure",
            "panicked",
            "fatal",
            "Fatal",
            "FATAL",
            "No such file",
            "not found",
            "Not found",
            "denied",
            "refused",
            "Segmentation fault",
            "Cannot ",
            "cannot ",
            "undefined",
            "Undefined",
            "timed out",
            "Timeout",
            "non-zero",
        ])
        .expect("error markers build")
});

/// Whether the marker at `start..end` is part of a name: `test_error_state`, `errorcode`,
/// `on_error` (verify27: a passing test and a query's column header listed as errors). A named
/// error (`TypeError`) and a plural (`errors`) still mark one.
fn in_identifier(text: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    let before = start.checked_sub(1).map(|at| bytes[at]);
    let after = bytes.get(end).copied();
    let alphanumeric_at = |at: Option<usize>| {
        at.and_then(|at| bytes.get(at))
            .is_some_and(u8::is_ascii_alphanumeric)
    };
    // A hyphenated key (`custom-http-errors: "404,503"`, `error-log-level: notice`), or a status
    // a field holds whole (`"conclusion": "failure"`) (verify28).
    let hyphenated = (before == Some(b'-') && alphanumeric_at(start.checked_sub(2)))
        || (after == Some(b'-') && alphanumeric_at(Some(end + 1)));
    let quoted_value = matches!(
        (before, bytes.get(end + usize::from(after == Some(b's'))).copied()),
        (Some(b'"'), Some(b'"')) | (Some(b'\''), Some(b'\''))
    );
    // A marker that ends with its word's space (`Cannot `) is followed by the next word, not by
    // more of its own (verify47: `Cannot find module 'postcss-nested'` was never an error line).
    let word_ended = bytes[start..end].ends_with(b" ");
    before == Some(b'_')
        || (!word_ended && after == Some(b'_'))
        || (!word_ended && after.is_some_and(|byte| byte.is_ascii_lowercase() && byte != b's'))
        || hyphenated
        || quoted_value
}

/// Words that state a constraint, matched as whole words, ignoring ASCII case.
/// Labels a user opens a paragraph of rules with, lowercase.
const RULE_LABELS: [&str; 7] = [
    "constraints:",
    "constraint:",
    "rules:",
    "hard rules:",
    "ground rules:",
    "requirements:",
    "requirement:",
];

pub(super) static CONSTRAINT_WORDS: LazyLock<Words> = LazyLock::new(|| {
    Words::new(&[
        "must",
        "mustn't",
        "don't",
        "do not",
        "never",
        "always",
        "prefer",
        "avoid",
        "make sure",
        "ensure",
        "shouldn't",
        "should not",
        "no more than",
        // `no more helm upgrades today`, `change freeze until 18:00 UTC` (verify47: lost from
        // Constraints beside the rule said before them).
        "no more",
        "change freeze",
        "code freeze",
        "deploy freeze",
        "deployment freeze",
        "merge freeze",
        "release freeze",
        "at most",
        "at least",
        "without",
        "only",
        "hold off",
        "leave",
        "keep",
    ])
});

/// What bounds a rule in time, which `no more` needs to state one (`no more deploys today`), not
/// to say what happened (`no more errors in the log`).
const FOR_A_TIME: [&str; 8] = [
    " today",
    " tonight",
    " until ",
    " till ",
    " for now",
    " this week",
    " before ",
    " for the rest of",
];

/// What `keep` is told with when it states a rule (`Keep the deep-link API backward compatible`,
/// `keep the migration reversible`; verify41: neither was listed), not a step (`keep going`,
/// `keep an eye on the logs`).
const KEEP_AS: [&str; 12] = [
    // `Keep the Subscriber API the same — internal/api depends on it` (verify45).
    "the same",
    "as it is",
    "compatible",
    "reversible",
    "unchanged",
    "as is",
    "as-is",
    "stable",
    "private",
    "under ",
    "below ",
    "pinned",
];

/// What `leave` is told with when it states a rule (`Leave firefox for now`), not a step (`leave
/// a comment on the PR`).
const LEAVE_AS: [&str; 6] = ["for now", "alone", "as is", "as-is", "untouched", "unchanged"];

/// Whether `sentence` states a rule: a constraint word in it other than `never` or `always`
/// before a verb in the past tense, which tells what happened (`We never added that permission`,
/// `it always failed on Fridays`), not what must.
pub(super) fn states_a_rule(sentence: &str) -> bool {
    let mut from = 0;
    while let Some((start, end)) = CONSTRAINT_WORDS.find_at(sentence, from) {
        let word = &sentence[start..end];
        if word.eq_ignore_ascii_case("leave") || word.eq_ignore_ascii_case("keep") {
            let rest = sentence[end..].to_ascii_lowercase();
            let told_as: &[&str] = if word.eq_ignore_ascii_case("keep") {
                &KEEP_AS
            } else {
                &LEAVE_AS
            };
            if told_as.iter().any(|told| rest.contains(told)) {
                return true;
            }
            from = end;
            continue;
        }
        if word.eq_ignore_ascii_case("no more") {
            let rest = sentence[end..].to_ascii_lowercase();
            if FOR_A_TIME.iter().any(|bound| rest.contains(bound)) {
                return true;
            }
            from = end;
            continue;
        }
        // `a read-only Nexus token`, `append-only`: what a thing is, not what must be (verify46:
        // a blocker waiting on one was listed as a rule).
        if word.eq_ignore_ascii_case("only") && sentence[..start].ends_with('-') {
            from = end;
            continue;
        }
        let never_or_always = word.eq_ignore_ascii_case("never") || word.eq_ignore_ascii_case("always");
        let tells_what_happens = never_or_always
            && (sentence[end..]
                .split_whitespace()
                .next()
                .is_some_and(|next| is_past_tense(next) || describes(next))
                || in_purpose_clause(&sentence[..start]));
        if !tells_what_happens {
            return true;
        }
        from = end;
    }
    false
}

/// Whether the words `before` a `never` or `always` open a clause of purpose: `… in the segment
/// files so we never normalize at query time` says what a proposal would achieve, not a rule
/// (verify39: a colleague's suggestion, asked about, listed under Constraints).
fn in_purpose_clause(before: &str) -> bool {
    const PURPOSE: [&str; 6] = [
        " so we",
        " so that we",
        " so that",
        " so it",
        " so they",
        " so you",
    ];
    let before = before.trim_end().to_ascii_lowercase();
    PURPOSE.iter().any(|purpose| before.ends_with(purpose))
}

/// Whether `word`, after `never` or `always`, describes what happens rather than tells what to
/// do: a verb of the third person (`never fails`, `always reproduces`; not `never pass`), a verb
/// of being, or no verb at all (`fails on CI one run in eight, never locally.`, verify18).
fn describes(word: &str) -> bool {
    const NO_VERB: &[&str] = &[
        "is",
        "are",
        "has",
        "have",
        "been",
        "be",
        "locally",
        "here",
        "there",
        "again",
        "before",
        "once",
        "since",
        "on",
        "in",
        "at",
        "for",
        "with",
        "when",
        "if",
        "yet",
        "anywhere",
        "elsewhere",
        "reproduces",
        "a",
        "an",
        "the",
    ];
    let ends_the_clause = word.ends_with(['.', ',', ';', ')', '!']);
    let word = word
        .trim_end_matches(|c: char| !c.is_ascii_alphabetic())
        .to_ascii_lowercase();
    if word.is_empty() {
        return false;
    }
    ends_the_clause
        || NO_VERB.contains(&word.as_str())
        || (word.len() >= 4
            && word.ends_with('s')
            && !["ss", "us", "is", "as"].iter().any(|end| word.ends_with(end)))
}

/// Whether `word` is a verb in the past tense: a regular one (`added`, `shipped`; not `need`,
/// `exceed`), or a common irregular one.
fn is_past_tense(word: &str) -> bool {
    const IRREGULAR: &[&str] = &[
        "had", "was", "were", "did", "got", "saw", "made", "took", "went", "knew", "sent", "came", "gave",
        "told", "wrote", "found", "thought", "heard", "left", "kept", "built", "bought", "paid", "said",
        "ran", "agreed",
    ];
    let word = word
        .trim_end_matches(|c: char| !c.is_ascii_alphabetic())
        .to_ascii_lowercase();
    IRREGULAR.contains(&word.as_str())
        || (word.len() >= 5 && word.ends_with("ed") && !word.ends_with("eed") && word != "embed")
}

/// Words that say work is blocked, matched as whole words, ignoring ASCII case: `Blocked: the
/// prod reader role cannot list the state bucket`, `Until that lands prod stays blocked`. Not
/// `blocking`, which is as often `non-blocking`.
pub(super) static BLOCKER_WORDS: LazyLock<Words> = LazyLock::new(|| {
    // `blocker` only where it names what blocks the work, not where a plan lists one (`added
    // DATA-2046 as a blocker for PII`, verify18).
    Words::new(&[
        "blocked",
        "blocker:",
        "blockers:",
        "is a blocker",
        "is the blocker",
        "still a blocker",
        "the blocker is",
        "the only blocker",
        "waiting on",
        "can't proceed",
        "cannot proceed",
        // What only someone else can grant (verify33: `updating repo secrets needs org-admin
        // rights my token doesn't have` in no summary's Blocked).
        "needs admin rights",
        "need admin rights",
        "requires admin rights",
        "needs org-admin rights",
        "need org-admin rights",
        "requires org-admin rights",
        "needs admin access",
        "need admin access",
        "requires admin access",
        "until an admin",
        "until an org admin",
        "only an admin can",
        "only an org admin can",
        "until someone with",
        // What the user cannot give the agent (verify42: `I can't give you access to the prod
        // metrics in Datadog yet, that needs SRE approval (ticket OPS-4412)` in no Blocked).
        "can't give you access",
        "cannot give you access",
        "can't give you the",
        "cannot give you the",
        "you don't have access",
        "you do not have access",
        "isn't reachable from",
        "is not reachable from",
        "aren't reachable from",
        "are not reachable from",
    ])
});

/// Whether `text` says what blocks the work ([`BLOCKER_WORDS`]).
pub(super) fn states_a_blocker(text: &str) -> bool {
    BLOCKER_WORDS.find_at(text, 0).is_some()
}

/// Words that say the work waits on something (`The backfill of the 37 records waits on
/// DATA-911`, `0.1.0 waits for the org approval (pypi/support#4821)`): a blocker only where the
/// sentence names the ticket it waits on; `waiting for the build` is a status (verify25: three
/// tickets the work waited on reached no summary's Blocked).
pub(super) static WAITING_WORDS: LazyLock<Words> = LazyLock::new(|| {
    Words::new(&[
        "waits on",
        "waits for",
        "waiting for",
        "on hold until",
        "pending approval",
    ])
});

/// Words that say something blocking the work is no longer in the way (`DATA-2291 is done: the
/// grant is in place`, `the VPN is back`), matched as whole words, ignoring ASCII case.
pub(super) static LIFTED_WORDS: LazyLock<Words> = LazyLock::new(|| {
    Words::new(&[
        "unblocked",
        "no longer blocked",
        "is done",
        "are done",
        "is resolved",
        "was resolved",
        "are resolved",
        "is fixed",
        "was fixed",
        "is in place",
        "are in place",
        "is granted",
        "was granted",
        "were granted",
        "has been granted",
        "have been granted",
        "granted us",
        "is approved",
        "was approved",
        "has been approved",
        "is merged",
        "was merged",
        "has been merged",
        "is closed",
        "was closed",
        "is back",
        "is lifted",
        "was lifted",
        "has been lifted",
        "is live",
        "has landed",
        "landed",
        "go ahead",
        "you can proceed",
        // What the user made available (verify42: `I copied the full export into data/full/ now,
        // you can use that instead of the sample`; `OPS-4412 got approved, you now have read
        // access`).
        "you can use",
        "you now have",
        "you have access",
        "now have access",
        "got approved",
        "is available now",
        "are available now",
        "is reachable now",
        "is accessible now",
        // What the user cleared themselves (verify47: `I released the lock from the jenkins
        // side, try the plan again` after the assistant's `Atlantis plan is blocked: the state
        // is locked …`).
        "I released",
        "I've released",
        "is released",
        "was released",
        "has been released",
        "I unlocked",
        "I've unlocked",
        "is unlocked",
        "was unlocked",
        "I cleared",
        "I've cleared",
        "I fixed",
        "I've fixed",
        "I resolved",
        "I've resolved",
        "I granted",
        "I've granted",
        "I restored",
        "I've restored",
        "is restored",
        "was restored",
    ])
});

/// Words that permit what a rule the user stated forbade (`you may use \`git add -A\` again`),
/// matched as whole words, ignoring ASCII case.
pub(super) static PERMITTED_WORDS: LazyLock<Words> = LazyLock::new(|| {
    // Not `you may` alone: `you may need to restart the prod database` permits nothing.
    Words::new(&[
        "you may use",
        "you may run",
        "you may now",
        "you may again",
        "you may edit",
        "you may change",
        "you may commit",
        "you may push",
        "you may touch",
        "you may delete",
        "you may go ahead",
        // `you may restart pg-primary-1 then` after `no restart of pg-primary-1` (verify46).
        "you may restart",
        "you may reboot",
        "you may deploy",
        "you may merge",
        "go ahead and",
        "you can now",
        // `you can run rover against Studio now` after `until then don't run \`rover supergraph
        // compose\` against Studio` (verify42: the rule listed to the end).
        "you can run",
        "you can use",
        "you can push",
        "you can deploy",
        "you can touch",
        "you can edit",
        "you can change",
        "you can commit",
        "you can delete",
        "you can restart",
        // `Product just agreed we can add a \`churn_bucket\` column to churn_scores.csv after
        // all` after `Don't change the schema of reports/churn_scores.csv` (verify45).
        "we can add",
        "you can add",
        "agreed we can",
        "you can reboot",
        "you can merge",
        "is allowed again",
        "are allowed again",
        "is allowed now",
        "is fine again",
        "is ok again",
        "is okay again",
        "no longer need to",
        "no longer have to",
        "no longer forbidden",
        "feel free to",
        "it's fine to",
        "it is fine to",
        "is fine now",
        "are fine now",
        "rule is off",
        "is off now",
    ])
});

/// Words that say the opposite of what a lifting word says in the same sentence (`DATA-2291 is
/// still open, nothing is done`): such a sentence lifts nothing.
const STILL_BLOCKED: [&str; 7] = ["still", "not ", "n't", "pending", " yet", "waiting", "blocked:"];

/// The tracker tickets (`DATA-911`) and repository issues (`pypi/support#4821`, its URL) that
/// `sentence` names. A bare number (`CI run #4521`) may be anything: a run, a build.
pub(super) fn tickets(sentence: &str) -> impl Iterator<Item = &str> {
    sentence
        .split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '#' | '/' | '.' | '_')))
        .map(|token| token.trim_matches(|c: char| matches!(c, '-' | '/' | '.' | '_')))
        .filter(|token| {
            is_ticket_key(token)
                || token.rsplit_once('#').is_some_and(|(repository, number)| {
                    repository.contains('/')
                        && !number.is_empty()
                        && number.bytes().all(|byte| byte.is_ascii_digit())
                })
                || token.contains("/issues/")
        })
}

/// Whether `sentence` names a tracker's ticket or a repository's issue ([`tickets`]).
pub(super) fn names_a_ticket(sentence: &str) -> bool {
    tickets(sentence).next().is_some()
}

/// Whether `lift`, a sentence that says something no longer blocks the work, says it of the
/// blocker itself rather than of what it names: `The blocker is lifted`, `we're unblocked`.
pub(super) fn lifts_the_blocker(lift: &str) -> bool {
    const THE_BLOCKER: [&str; 7] = [
        "the blocker",
        "that blocker",
        "this blocker",
        "we're unblocked",
        "we are unblocked",
        "you're unblocked",
        "you are unblocked",
    ];
    let lower = lift.to_ascii_lowercase();
    THE_BLOCKER.iter().any(|words| lower.contains(words))
}

/// Whether `sentence`, which names what blocks the work, says instead that it no longer does
/// (`The blocker is lifted — you can proceed with prod`, `the deploy is unblocked`).
pub(super) fn says_unblocked(sentence: &str) -> bool {
    let lower = sentence.to_ascii_lowercase();
    says_lifted(sentence)
        && (lifts_the_blocker(sentence) || lower.contains("unblocked") || lower.contains("no longer blocked"))
}

/// Whether `sentence` says something is no longer in the way, without saying it still is.
pub(super) fn says_lifted(sentence: &str) -> bool {
    let lower = sentence.to_ascii_lowercase();
    LIFTED_WORDS.find_at(sentence, 0).is_some() && !STILL_BLOCKED.iter().any(|word| lower.contains(word))
}

/// Words that state a decision, matched as whole words, ignoring ASCII case.
pub(super) static DECISION_WORDS: LazyLock<Words> = LazyLock::new(|| {
    Words::new(&[
        "decided",
        "decide to",
        "chose",
        "going with",
        "go with",
        "will use",
        "I'll use",
        "we'll use",
        "switch to",
        "switched to",
        "instead of",
        "root cause",
        // Not `the fix` alone: `pushed the fix to PR #812` is a status, not a decision.
        "the fix is",
        "the fix was",
        "the fix will be",
        "fixed by",
        "the problem is",
        "the problem was",
        "the issue is",
        "the issue was",
        "the bug is",
        "the bug was",
        "turns out",
        "caused by",
        "because",
    ])
});

/// What marks a decision the user states (`Let's record it: Decision 3: …`, `we agreed to …`):
/// narrower than [`DECISION_WORDS`], whose `because` and `instead of` are the user's worries and
/// wishes as often as decisions.
pub(super) static USER_DECISION_WORDS: LazyLock<Words> = LazyLock::new(|| {
    Words::new(&[
        "decided",
        "decide to",
        "decision",
        "we agreed",
        "agreed to",
        "let's go with",
        "we'll go with",
        "going with",
    ])
});

/// A measured change, a number before and after an arrow: `2381.442 ms -> 3.112 ms`, `p95 840 →
/// 95 ms`, `AUC 0.79 => 0.82`.
static MEASURED_CHANGE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\d(?:[\d.,]*\d)?[ \t]*(?:[A-Za-zµ%/]{1,6}[ \t]*)?(?:->|→|=>)[ \t]*[~≈]?\d")
        .expect("the measured change pattern compiles")
});

/// Whether the arrow of the change at `start..end` of `text` stands between two versions
/// (`8.3.2 -> 8.5.1`): numbers of three parts and more either side.
fn versions_either_side(text: &str, start: usize, end: usize) -> bool {
    let is_version = |word: &str| {
        let word = word.trim_matches(|c: char| !c.is_ascii_digit());
        word.split('.').count() >= 3
            && word
                .split('.')
                .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
    };
    let change = &text[start..end];
    let Some((at, arrow)) = ["->", "→", "=>"]
        .iter()
        .find_map(|arrow| Some((change.find(arrow)?, arrow.len())))
    else {
        return false;
    };
    let before = change[..at].split_whitespace().next().unwrap_or("");
    let after = text[start + at + arrow..].split_whitespace().next().unwrap_or("");
    is_version(before) && is_version(after)
}

/// A finding the assistant states under a label of its own, at the start of a line or of a
/// sentence: `Culprit: 7c4e91a2d0 (core: intern heading slugs …, #897).`, `Root cause: the pool
/// is exhausted by …`. What a hunt concluded, which no command's line says: a bisect's culprit was
/// kept only among 230 hashes (verify25). So is an outcome the assistant reports under a label
/// (`Fixed: stg_orders builds, …`, `Rollback done: orders-prod is on v2.30.4 …`): no command's
/// line said the rollback was done (verify29). The label may say what it is about in brackets
/// (`Root cause (PERF-2211): QueryCache never evicts …`, verify39), and may follow a dash or say
/// `the` (`Loss went NaN at step 1200 — root cause: …`, `The root cause: …`; verify40: an ML
/// session's root cause, mid-paragraph, was lost in one compaction), and may be one so far
/// (`Root cause so far: …`, verify42). A root cause said in a sentence is one too (`The root
/// cause is that Subscriber.Run never watches ctx.Done(): …`, verify45: ranked as reasoning, it
/// gave way to passing test runs).
static FINDING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?mi)(?:^[ \t]*(?:[-*][ \t]+)?|[.!?][ \t]+|[ \t][—–][ \t]+)(?:\*\*)?(?:the[ \t]+)?(?:(?:culprit|root[ \t]+cause|cause|diagnosis|conclusion|finding|fixed|resolved|outcome|(?:[a-z]+[ \t]+)?done)(?:[ \t]+so[ \t]+far)?(?:[ \t]*\([^():\n]{1,60}\))?(?:\*\*)?[ \t]*:(?:\*\*)?|(?:root[ \t]+)?cause[ \t]+(?:is|was)(?:[ \t]+that)?)[ \t]+[^\n]*")
        .expect("the finding pattern compiles")
});

/// What a finding tells ([`FINDING`]): why something failed, or how the work ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FindingKind {
    /// `Root cause: …`, `Culprit: …`, `Diagnosis: …`: what a hunt concluded.
    Diagnosis,
    /// `Fixed: …`, `Rollback done: …`, `Resolved: …`: what the work achieved.
    Outcome,
}

impl FindingKind {
    /// The kind of `finding`, a line that opens with its label: by the first of
    /// [`FINDING_LABELS`] the label holds.
    pub(super) fn of(finding: &str) -> Self {
        let label = finding.split_once(':').map_or(finding, |(label, _)| label);
        match FINDING_LABELS.find(label) {
            Some(word) if word.pattern().as_usize() < DIAGNOSIS_LABELS => Self::Diagnosis,
            _ => Self::Outcome,
        }
    }
}

/// How many of [`FINDING_LABELS`], the first, label a diagnosis; the others an outcome.
const DIAGNOSIS_LABELS: usize = 5;
/// Which of [`FINDING_LABELS`] says `cause`, which a sentence may state without a colon.
const CAUSE_LABEL: usize = 1;

/// The words a finding's label holds ([`FINDING`]), found in one pass: diagnoses first.
static FINDING_LABELS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .build([
            "culprit",
            "cause",
            "diagnosis",
            "conclusion",
            "finding",
            "fixed",
            "resolved",
            "outcome",
            "done",
        ])
        .expect("the finding labels build")
});

/// The findings `text` states under a label ([`FINDING`]), each from its label to the end of its
/// line.
pub(super) fn findings<'a>(text: &'a str, index: usize, into: &mut Vec<Sentence<'a>>) {
    // Most text holds no such label: one pass for the labels is cheaper than the pattern.
    let labelled = FINDING_LABELS.find_iter(text).any(|found| {
        let after = text[found.end()..].trim_start_matches(['*', ' ', '\t']);
        // A finding on the way: `Root cause so far: …` (verify42).
        let after = after
            .strip_prefix("so far")
            .map_or(after, |rest| rest.trim_start());
        // Past what the label is about: `Root cause (PERF-2211):`.
        let after = after
            .strip_prefix('(')
            .and_then(|about| about.split_once(')'))
            .map_or(after, |(_, rest)| rest.trim_start_matches(['*', ' ', '\t']));
        after.starts_with(':')
            || (found.pattern().as_usize() == CAUSE_LABEL
                && (after.starts_with("is ") || after.starts_with("was ")))
    });
    if !labelled {
        return;
    }
    for found in FINDING.find_iter(text) {
        let line = found.as_str().trim_start_matches(|c: char| {
            c.is_whitespace() || matches!(c, '.' | '!' | '?' | '-' | '*' | '—' | '–')
        });
        let line = line.trim_end();
        let said = line.split_once(':').map_or(line, |(_, said)| said);
        if said.trim().trim_start_matches('*').trim().len() >= MIN_RECORD_TEXT {
            into.push(Sentence { index, text: line });
        }
    }
}

/// Whether `line`, a line of an earlier summary, opens with a finding under its label
/// ([`FINDING`]): `Root cause: 559e0e8 (#1412) removed the ingress rule …`.
pub(super) fn states_a_finding(line: &str) -> bool {
    // A label is a word or two before a colon: most lines (an action's `[terminal] ran …`) are
    // told by their first bytes.
    // Or said in a sentence: `The root cause is that …`.
    let label_end = cut_at(line, 100)
        .find(':')
        .unwrap_or_else(|| cut_at(line, 24).len());
    line.starts_with(|c: char| c.is_alphabetic() || c == '*')
        && FINDING_LABELS.is_match(&line[..label_end])
        && FINDING.find(line).is_some_and(|found| found.start() == 0)
}

/// The sentences of `text` that state a measured change ([`MEASURED_CHANGE`]), each once.
pub(super) fn measured_changes<'a>(text: &'a str, index: usize, into: &mut Vec<Sentence<'a>>) {
    // Most text holds no arrow: one byte search (`>`, or the lead byte of `→`) is far cheaper
    // than the pattern.
    if memchr::memchr2(b'>', 0xE2, text.as_bytes()).is_none() {
        return;
    }
    let mut from = 0;
    while let Some(found) = MEASURED_CHANGE.find_at(text, from) {
        let (sentence, end) = sentence_around(text, found.start(), found.end(), MAX_SENTENCE);
        from = end.max(found.end());
        let sentence = sentence.trim();
        // A version moved (`AGP 8.3.2 -> 8.5.1`) is no measurement, and a decision recorded is
        // listed as one (verify19: `Result: Decision 1: upgrade AGP 8.3.2 -> 8.5.1` under Done
        // after its reversal).
        if versions_either_side(text, found.start(), found.end()) || opens_with_record(sentence) {
            continue;
        }
        if !into.iter().rev().take(4).any(|seen| seen.text == sentence) {
            into.push(Sentence {
                index,
                text: sentence,
            });
        }
    }
}

/// A decision as a running list records it, at the start of a line or of its sentence:
/// `Decision 3: no CDC …`, `**Decision 1 reversed:** warehouse = BigQuery …`, `Noted. Decision 2:
/// …`, `I propose — Decision 2: …`, `Also, Decision 3: …`, `One more reversal: Decision 2
/// revised — …`, and a revision said first: `Reverse decision 1: we go BigQuery`, `About decision 1: keep
/// 8G`, `Reverse yesterday's decision: impute tenure`, `Reverse the decision about the flag — ship
/// directly` (verify43), `Reversing the earlier decision: we will NOT use …` (verify47). A
/// planning assistant asked to keep the decisions writes them so, and so do users recording their
/// own; the number says which earlier record a revision replaces. A record stated inline, after a
/// semicolon or a spaced dash, is one too (`Days now work; decision: weeks stay unsupported …`,
/// `P1W fails - decision: …`): an agent states its decision so mid-sentence (verify48: Key
/// Decisions was `(none)` and the sentence in no summary).
static DECISION_RECORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?mi)(?:^[ \t]*(?:[-*][ \t]+|\d{1,3}\.[ \t]+)?|(?:[.!?—–:;]|[ \t]-)[ \t]+)(?:(?:also|and|so|then|ok|okay|now|finally|next|plus),?[ \t]+)?((?:\*\*)?(?:(reverse|reversing|revert|reverting|revise|revising|revised|reversed|amended|updated|revisit|change|update|amend|about|re)[ \t]+(?:[\w']+[ \t]+){0,2})?decision(?:[ \t]+#?(\d{1,4}))?(?:[ \t]+(?:is[ \t]+|was[ \t]+|has[ \t]+been[ \t]+)?(revised|reversed|updated|changed|amended|replaced|reverted|withdrawn|cancell?ed))?(?:[ \t]+(?:about|on|for|regarding)(?:[ \t]+[\w`'.-]+){1,5})?(?:[ \t]*\([^)\n]{1,60}\))?(?:\*\*)?(?:[ \t]*:|[ \t]+[—–]))[^\n]*",
    )
    .expect("the decision record pattern compiles")
});

/// A reversal that points back at the decision before it instead of naming it, as a label:
/// `Reverting that: we keep REACT_APP_API_URL.`, `Scratch that — stay on Postgres 15`. It
/// revises the latest record as `Reverse the decision: …` does (verify47: `Decision: rename
/// REACT_APP_* env vars to VITE_*` stood as the current one after it). Only as a label, before a
/// colon or a dash: `Revert that.` alone asks for a commit to be reverted.
static POINTING_BACK_RECORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?mi)(?:^[ \t]*(?:[-*][ \t]+|\d{1,3}\.[ \t]+)?|[.!?][ \t]+)((?:\*\*)?(?:reversing|reverting|revert|reverse|undoing|undo|scratch)[ \t]+(?:that|this)(?:\*\*)?(?:[ \t]*:|[ \t]+[—–]))[^\n]*",
    )
    .expect("the pointing-back record pattern compiles")
});

/// A record a team keys its own way, `BC-1: camelCase field names` or `ADR-7: …`, at the start
/// of a line, or a revision of one: `BC-1 revised: v2 keeps snake_case`, `Reverse BC-1: …`,
/// `ADR-7 superseded: …`. The key names a ticket as often as a decision (`OPS-3302: restart the
/// pods`), so a line is a record only under a heading that says it lists decisions (`Decisions
/// recorded:`), and a revision only with a word that revises (verify22: `BC-1 revised: v2 keeps
/// snake_case` stood beside `BC-1: camelCase field names in v2` in every summary).
static KEYED_RECORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?m)^[ \t]*(?:[-*][ \t]+|\d{1,3}\.[ \t]+)?((?:\*\*)?(?:((?i:reverse|revise))[ \t]+)?([A-Z][A-Z0-9]{0,7})-(\d{1,4})(?:[ \t]+(?i:is[ \t]+|was[ \t]+|has[ \t]+been[ \t]+)?((?i:revised|reversed|superseded)))?(?:\*\*)?(?:[ \t]*:|[ \t]+[—–]))[^\n]*",
    )
    .expect("the keyed record pattern compiles")
});

/// What names a decision record, so that a later record with the same name replaces it:
/// `Decision 3`, or a team's own series and number (`BC-1`, `ADR-7`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RecordKey {
    /// The series, uppercase ASCII, zero-padded: `DECISION` for `Decision N`.
    series: [u8; 8],
    pub number: u32,
}

impl RecordKey {
    fn new(series: &str, number: u32) -> Option<Self> {
        let mut bytes = [0; 8];
        bytes.get_mut(..series.len())?.copy_from_slice(series.as_bytes());
        bytes.make_ascii_uppercase();
        Some(Self {
            series: bytes,
            number,
        })
    }

    fn decision(number: u32) -> Self {
        Self {
            series: *b"DECISION",
            number,
        }
    }
}

/// The shortest text after a record's `:` that makes it a decision, in bytes.
const MIN_RECORD_TEXT: usize = 3;

/// The decisions `text` records (`Decision 3: …`, `BC-1: …` under a heading of decisions), each
/// from its label to the end of its line.
pub(super) fn decision_records<'a>(text: &'a str, index: usize, into: &mut Vec<DecisionRecord<'a>>) {
    // Most text holds no record: one pass for the words is far cheaper than the patterns.
    static WORDS: LazyLock<AhoCorasick> = LazyLock::new(|| {
        AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build([
                "decision",
                "revise",
                "reverse",
                "supersede",
                "revert",
                "undo",
                "scratch",
            ])
            .expect("the record words build")
    });
    let from = into.len();
    let (mut decides, mut revises) = (false, false);
    for found in WORDS.find_iter(text) {
        match found.pattern().as_usize() {
            0 => decides = true,
            _ => revises = true,
        }
        if decides && revises {
            break;
        }
    }
    if decides {
        for (found, record) in labelled_records(&DECISION_RECORD, text) {
            let key = found
                .get(3)
                .and_then(|number| number.as_str().parse().ok())
                .map(RecordKey::decision);
            let replaces = replaced_key(record).filter(|replaced| Some(*replaced) != key);
            into.push(DecisionRecord {
                index,
                key,
                replaces,
                revises: found.get(2).is_some() || found.get(4).is_some() || replaces.is_some(),
                text: record,
            });
        }
    }
    if revises {
        let found_before = into.len();
        for (_, record) in labelled_records(&POINTING_BACK_RECORD, text) {
            // `Scratch that: Decision 2: …` is one record, the numbered one, and it revises.
            let span = record.as_ptr() as usize..record.as_ptr() as usize + record.len();
            if let Some(within) = into[from..found_before]
                .iter_mut()
                .find(|other| span.contains(&(other.text.as_ptr() as usize)))
            {
                within.revises = true;
                continue;
            }
            into.push(DecisionRecord {
                index,
                key: None,
                replaces: None,
                revises: true,
                text: record,
            });
        }
    }
    if decides || revises {
        keyed_records(text, index, decides, into);
    }
    // In the order they were written: a revision replaces the record before it.
    into[from..].sort_by_key(|record| record.text.as_ptr() as usize);
}

/// The records `pattern` finds in `text` (its group 1 the label), each with its text from the
/// label to the line's end, when that says enough past the label.
fn labelled_records<'t>(
    pattern: &'static Regex,
    text: &'t str,
) -> impl Iterator<Item = (regex::Captures<'t>, &'t str)> {
    pattern.captures_iter(text).filter_map(move |found| {
        let (line, label) = (found.get(0)?, found.get(1)?);
        let record = text[label.start()..line.end()].trim_end();
        (record[label.len()..].trim().len() >= MIN_RECORD_TEXT).then_some((found, record))
    })
}

/// The records of [`KEYED_RECORD`] in `text`: revisions, and when `decides`, the lines under a
/// heading of decisions.
fn keyed_records<'a>(text: &'a str, index: usize, decides: bool, into: &mut Vec<DecisionRecord<'a>>) {
    for found in KEYED_RECORD.captures_iter(text) {
        let (Some(line), Some(label), Some(series), Some(number)) =
            (found.get(0), found.get(1), found.get(3), found.get(4))
        else {
            continue;
        };
        let revises = found.get(2).is_some() || found.get(5).is_some();
        let listed = decides && under_decisions_heading(text, line.start());
        if !revises && !listed {
            continue;
        }
        let record = text[label.start()..line.end()].trim_end();
        let (Some(key), true) = (
            number
                .as_str()
                .parse()
                .ok()
                .and_then(|number| RecordKey::new(series.as_str(), number)),
            record[label.len()..].trim().len() >= MIN_RECORD_TEXT,
        ) else {
            continue;
        };
        let replaces = replaced_key(record).filter(|replaced| *replaced != key);
        into.push(DecisionRecord {
            index,
            key: Some(key),
            replaces,
            revises: revises || replaces.is_some(),
            text: record,
        });
    }
}

/// Whether the line at `at` belongs to a list headed by a line that names decisions
/// (`Decisions recorded:`, `## Decision log`): the nearest line above it that is no list item.
fn under_decisions_heading(text: &str, at: usize) -> bool {
    let heading = text[..at]
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.starts_with(['-', '*']) && !starts_numbered(line));
    // The heading is about decisions: one of its first two words names them (`Decisions
    // recorded:`, `## Decision log`, `Key decisions:`), not a list that mentions one (`Tickets
    // waiting on this decision:`).
    heading.is_some_and(|heading| {
        let heading = heading.to_ascii_lowercase();
        let names_them = heading
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|word| !word.is_empty())
            .take(2)
            .any(|word| word == "decision" || word == "decisions");
        names_them && (heading.ends_with(':') || heading.starts_with('#'))
    })
}

/// Whether `line` opens with a list number (`3. `).
fn starts_numbered(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    (1..=3).contains(&digits) && line[digits..].starts_with(". ")
}

/// The record a record says it replaces: `Decision 2 (replaces 1): …`, `Decision 2: Yarn
/// (replaces decision 1)`, `ADR-9: … supersedes ADR-7` (verify27: a replaced decision was listed
/// as the current one in every summary of two sessions).
fn replaced_key(record: &str) -> Option<RecordKey> {
    static REPLACES: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"(?i)\b(?:replaces|supersedes|overrides)[ \t]+(?:(?:decision|the[ \t]+decision)[ \t]+#?(\d{1,4})\b|#?(\d{1,4})\b|(?-i:([A-Z][A-Z0-9]{0,7})-(\d{1,4}))\b)")
            .expect("the replacement pattern compiles")
    });
    if !record.contains("eplaces") && !record.contains("upersedes") && !record.contains("verrides") {
        return None;
    }
    let found = REPLACES.captures(record)?;
    if let Some(number) = found.get(1).or(found.get(2)) {
        return number.as_str().parse().ok().map(RecordKey::decision);
    }
    RecordKey::new(found.get(3)?.as_str(), found.get(4)?.as_str().parse().ok()?)
}

/// Whether `line` opens with a decision record (`Decision: …`, `Reverse decision 1: …`), past a
/// word of assent ([`past_assent`]).
pub(super) fn opens_with_record(line: &str) -> bool {
    let mut records = Vec::new();
    decision_records(line, 0, &mut records);
    let opening = past_assent(line);
    records
        .iter()
        .any(|record| record.text.as_ptr() == opening.as_ptr())
}

/// `text` past a short sentence of assent that opens it (`Makes sense. Decision: pin the chart at
/// 4.10.1`, `OK, …`): what the user decided opens what they said (verify43: such a request stayed
/// under Goal after its reversal).
pub(super) fn past_assent(text: &str) -> &str {
    let text = text.trim_start();
    let Some(end) = text.get(..26).unwrap_or(text).find(['.', '!', ',']) else {
        return text;
    };
    const ASSENT: [&str; 17] = [
        "ok",
        "okay",
        "sure",
        "yes",
        "yep",
        "right",
        "agreed",
        "makes sense",
        "sounds good",
        "good",
        "great",
        "fine",
        "perfect",
        "thanks",
        "got it",
        "alright",
        "understood",
    ];
    let assent = text[..end].to_ascii_lowercase();
    let assents = ASSENT.iter().any(|word| {
        assent
            .strip_prefix(word)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '))
    });
    if !assents || assent.split_whitespace().count() > 3 || !text[end + 1..].starts_with(' ') {
        return text;
    }
    text[end + 1..].trim_start()
}

/// The key of the decision `line` records (`Decision 4 revised: …` is decision 4, `BC-1: …` is
/// BC-1), if it is one: a line a summary lists under Key Decisions, which needs no heading.
/// Whether `line` opens with a decision record's label, numbered or not (`Decision: …`,
/// `Decision reversed: …`).
pub(super) fn is_decision_record(line: &str) -> bool {
    [&DECISION_RECORD, &POINTING_BACK_RECORD]
        .iter()
        .any(|pattern| pattern.find(line).is_some_and(|whole| whole.start() == 0))
}

pub(super) fn decision_record_key(line: &str) -> Option<RecordKey> {
    let at_start = |found: &regex::Captures<'_>| found.get(0).is_some_and(|whole| whole.start() == 0);
    if let Some(found) = DECISION_RECORD.captures(line).filter(at_start) {
        return found.get(3)?.as_str().parse().ok().map(RecordKey::decision);
    }
    let found = KEYED_RECORD.captures(line).filter(at_start)?;
    RecordKey::new(found.get(3)?.as_str(), found.get(4)?.as_str().parse().ok()?)
}

/// Whole words or phrases, ignoring ASCII case.
pub(crate) struct Words(AhoCorasick);

impl Words {
    fn new(words: &[&str]) -> Self {
        Self(
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .ascii_case_insensitive(true)
                .build(words)
                .expect("word lists build"),
        )
    }

    /// The first whole-word match at or after `from`: `(start, end)`.
    fn find_at(&self, text: &str, from: usize) -> Option<(usize, usize)> {
        let bytes = text.as_bytes();
        let is_word = |at: usize| {
            bytes
                .get(at)
                .is_some_and(|b| b.is_ascii_alphanumeric() || *b == b'_')
        };
        let mut at = from;
        while at < text.len() {
            let found = self.0.find(Input::new(text).span(at..text.len()))?;
            let (start, end) = (found.start(), found.end());
            if (start == 0 || !is_word(start - 1)) && !is_word(end) {
                return Some((start, end));
            }
            at = start + 1;
        }
        None
    }
}

/// The code spans of `text`: what stands between two backticks on one line, 2 to 160 bytes.
fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while let Some(open) = memchr_from(bytes, b'`', at) {
            let close = memchr_from(bytes, b'`', open + 1)?;
            let inner = &bytes[open + 1..close];
            if !inner.contains(&b'\n') && (2..=160).contains(&inner.len()) {
                at = close + 1;
                return Some(&text[open + 1..close]);
            }
            // Not a span: the closing backtick may open the next one.
            at = close;
        }
        None
    })
}

fn memchr_from(bytes: &[u8], needle: u8, from: usize) -> Option<usize> {
    bytes
        .get(from..)?
        .iter()
        .position(|&byte| byte == needle)
        .map(|at| from + at)
}

/// Words a command line starts with, to tell a command in a code span from a name.
const COMMAND_WORDS: &[&str] = &[
    "cargo",
    "git",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "pip",
    "pip3",
    "python",
    "python3",
    "pytest",
    "make",
    "cmake",
    "go",
    "rustc",
    "rustup",
    "node",
    "deno",
    "bun",
    "docker",
    "kubectl",
    "helm",
    "terraform",
    "ls",
    "cd",
    "cat",
    "grep",
    "rg",
    "find",
    "sed",
    "awk",
    "curl",
    "wget",
    "ssh",
    "chmod",
    "mkdir",
    "rm",
    "mv",
    "cp",
    "tar",
    "uv",
    "poetry",
    "bundle",
    "gradle",
    "mvn",
    "dotnet",
    "gcc",
    "clang",
    "sudo",
    "apt",
    "apt-get",
    "brew",
    "systemctl",
    "journalctl",
    "export",
    "bash",
    "sh",
    "tox",
    "ruff",
    "mypy",
    "eslint",
    "tsc",
    "jest",
    "vitest",
    "gh",
];

/// The longest constraint or decision sentence kept, in bytes.
const MAX_SENTENCE: usize = 300;
/// The longest error line kept whole, in bytes.
const MAX_ERROR_LINE: usize = 300;
/// A longer one keeps its start, at least this many bytes and its first 200 characters (what the
/// retention measure compares)…
const ERROR_HEAD: usize = 210;
/// …and its end, about this many bytes.
const ERROR_END: usize = 90;

/// The line after an error line that ends in a colon, when it is what the error says and no
/// error line itself: `error during build:` says nothing until `[vite:css] [postcss] Cannot find
/// module 'postcss-nested'`, and dbt's `SQL compilation error:` nothing until `Object
/// 'RAW.SHOP.ORDER_ITEMS' does not exist or not authorized.` (verify47: the headers were listed,
/// the causes lost). A time stamp both lines open with is said once.
fn detail_after<'t>(line: &str, rest: &'t str) -> Option<&'t str> {
    let line = line.trim();
    if !line.ends_with(':') || line.contains("Traceback") || names_errors_as_heading(line) {
        return None;
    }
    let next = rest.strip_prefix('\n').or_else(|| rest.strip_prefix("\\n"))?;
    let next = next.split(['\n', '\r']).next()?;
    let next = next.split("\\n").next()?.trim();
    let stamp = line
        .split_whitespace()
        .next()
        .filter(|word| word.bytes().any(|b| b.is_ascii_digit()));
    let next = match stamp {
        Some(stamp) if next.starts_with(stamp) && next.len() > stamp.len() => {
            next[stamp.len()..].trim_start()
        }
        _ => next,
    };
    (next.len() >= 6 && next.len() <= MAX_ERROR_LINE && ERROR_MARKERS.find(next).is_none()).then_some(next)
}

/// An error line `line` whole when it fits in [`MAX_ERROR_LINE`] (a token finished past it),
/// else its start and its end around ` … `: what failed opens a line, and why often closes it
/// (`api error AccessDenied: User: arn:aws:sts::…:assumed-role/… is not authorized to perform:
/// iam:UpdateOpenIDConnectProviderThumbprint …`).
fn head_and_end(line: &str) -> Cow<'_, str> {
    let whole = cut_at_token(line, MAX_ERROR_LINE);
    if whole.len() == line.len() {
        return Cow::Borrowed(line);
    }
    let first_chars = line.char_indices().nth(200).map_or(line.len(), |(at, _)| at);
    let head = cut_at_token(line, first_chars.max(ERROR_HEAD));
    let mut end_from = ceil_char_boundary(line, line.len() - ERROR_END);
    // The end starts with a whole token when one starts soon enough.
    if let Some(at) = line[end_from..].find(char::is_whitespace) {
        if at < ERROR_END / 2 {
            end_from += at;
        }
    }
    let end = line[end_from..].trim_start();
    if end_from <= head.len() || end.is_empty() {
        return Cow::Borrowed(whole);
    }
    Cow::Owned(format!("{} … {end}", head.trim_end()))
}

impl<'a> Facts<'a> {
    /// Paths, URLs, routes, hashes, issue numbers and versions in `text`.
    pub(super) fn scan_identifiers(&mut self, text: &'a str, source: Source, index: usize) {
        if self.outcomes_only {
            return;
        }
        for_each_token(text, |token, shape| {
            let found = classify_token(token, shape).or_else(|| {
                shape
                    .has_digit_and_dot()
                    .then(|| bracketed_four_part_version(text, token))
                    .flatten()
                    .map(|version| (FactKind::Version, version))
            });
            if let Some((kind, fact)) = found {
                let (kind, fact) = match kind {
                    FactKind::Path
                        if fact.starts_with('/')
                            && (follows_http_method(text, fact)
                                || key_before(text, fact).is_some_and(names_a_route)) =>
                    {
                        (FactKind::Route, Cow::Borrowed(fact))
                    }
                    // A log line's id (`req_id=41649f767c45`) with its key: one of the log's many,
                    // of one shape, where the bare hex read as a commit (verify43: a thousand
                    // `req_id`s under Hashes).
                    FactKind::Hash => match key_before(text, fact) {
                        Some(key) if names_an_id(key) => (
                            kind,
                            Cow::Borrowed(&text[offset_in(text, key)..offset_in(text, fact) + fact.len()]),
                        ),
                        _ => (kind, Cow::Borrowed(fact)),
                    },
                    FactKind::Path => (kind, Cow::Borrowed(with_partition_prefix(text, fact))),
                    FactKind::Version => (kind, with_package_name(text, fact)),
                    FactKind::Issue if numbers_a_step(text, offset_in(text, fact), fact.len()) => return,
                    kind => (kind, Cow::Borrowed(fact)),
                };
                self.add(kind, fact, source, index);
            }
        });
    }

    /// Error lines in `text`, a piece of `body` (the whole text it was cut from), each once;
    /// returns the most telling (an `…Error: …` line over a `Traceback` or summary line).
    pub(super) fn scan_errors(
        &mut self,
        text: &'a str,
        body: &str,
        source: Source,
        index: usize,
    ) -> Option<Cow<'a, str>> {
        let mut best: Option<(u8, Cow<'a, str>)> = None;
        let mut json_document = None;
        let mut holds_hunk = None;
        // A row of a query's result is data, not an error printed (verify46: psql's `3101 |
        // Timeout | RecoveryApplyDelay` under Errors).
        let mut table_rows = None;
        let mut from = 0;
        while let Some(found) = ERROR_MARKERS.find(Input::new(text).span(from..text.len())) {
            // `"error": null` in a tool's JSON answer says there was none.
            let after = &text[found.end()..];
            let marker = &text[found.start()..found.end()];
            if marker == "error" && (after.starts_with("\": null") || after.starts_with("\":null")) {
                from = found.end();
                continue;
            }
            // A file named for errors (`Edited scripts/audit-exceptions.mjs`, `M
            // src/errors.ts`) and a key in code a command printed (`{ error: 'invalid' }`) report
            // none; a file read lists its lines that mention errors apart.
            let code_key = source != Source::FileContent && is_object_key(text, found.start(), found.end());
            if code_key
                || in_file_name(text, found.start(), found.end())
                || in_identifier(text, found.start(), found.end())
            {
                from = found.end();
                continue;
            }
            let (line, line_end) = line_around(text, found.start(), found.end());
            from = line_end.max(found.end());
            // A tool's JSON answer (`{"output": "…", "metadata": {…}}`): the line is the text of
            // its string, not the JSON around it nor its escapes.
            let line = if *json_document.get_or_insert_with(|| is_json_document(body)) {
                // Only the document's first line holds its structure, and only the body's first
                // piece holds that line.
                let at = line.as_ptr() as usize - text.as_ptr() as usize;
                let opens_document =
                    text.as_ptr() == body.as_ptr() && at == text.len() - text.trim_start().len();
                within_json_string(line, opens_document)
            } else {
                Cow::Borrowed(line)
            };
            let line = match line {
                Cow::Borrowed(line) => match detail_after(line, &text[line_end.min(text.len())..]) {
                    Some(detail) => {
                        Cow::Owned(head_and_end(&format!("{} {detail}", line.trim())).into_owned())
                    }
                    None => head_and_end(line.trim()),
                },
                Cow::Owned(line) => Cow::Owned(head_and_end(line.trim()).into_owned()),
            };
            // What the printer itself says (`cat: app/db/limits.py: No such file or directory`)
            // is how the read went, not a line of the file.
            let source = match source {
                Source::FileContent if is_printers_complaint(&line) => Source::ToolOutput,
                source => source,
            };
            let diff_line = is_diff_line(&line) && *holds_hunk.get_or_insert_with(|| body.contains("@@"));
            // The user's own words name an error only as the measure reads one (`TypeError: …`
            // pasted), not in a sentence that mentions one (verify27: `… let scan retry a failed
            // test once` listed under Errors).
            // So does a file's text read (verify39: Go's `func (s *Server) Order(…) error {` under
            // `Lines of files read that mention errors:`, 36 of them).
            let prose =
                matches!(source, Source::User | Source::FileContent) && first_error_line(&line).is_none();
            let query_row = table_rows
                .get_or_insert_with(|| query_result_rows(text))
                .iter()
                .any(|rows| rows.contains(&found.start()));
            if line.len() < 6
                || query_row
                || reports_no_error(&line)
                || is_column_headings(&line)
                || diff_line
                || prose
                || is_cut_marker(&line)
                || is_settled_status_row(&line)
                || reports_a_fallback(&line)
                || names_errors_as_heading(&line)
                || reports_a_skipped_test(&line)
            {
                continue;
            }
            let at = self.add(FactKind::Error, line.clone(), source, index);
            if let Cow::Borrowed(line) = line {
                self.mark_ids_in_error_line(line, source, index);
            } else {
                self.mark_ids_in_error_line_copied(at, source, index);
            }
            let score = error_line_score(&line);
            if best.as_ref().is_none_or(|(best_score, _)| score > *best_score) {
                best = Some((score, line));
            }
        }
        best.map(|(_, line)| line)
    }

    /// The ids an error line names are facts marked as such: an access log's failing request
    /// among its thousand successful ones.
    fn mark_ids_in_error_line(&mut self, line: &'a str, source: Source, index: usize) {
        for_each_token(line, |token, shape| {
            if let Some((FactKind::Hash, id)) = classify_token(token, shape) {
                let at = self.add(FactKind::Hash, Cow::Borrowed(id), source, index);
                self.facts[at].in_error_line = true;
            }
        });
    }

    /// [`mark_ids_in_error_line`](Self::mark_ids_in_error_line) for an error line the facts hold
    /// a copy of (decoded from a JSON answer): its ids are copied too.
    fn mark_ids_in_error_line_copied(&mut self, error: usize, source: Source, index: usize) {
        let mut ids = Vec::new();
        for_each_token(&self.facts[error].text, |token, shape| {
            if let Some((FactKind::Hash, id)) = classify_token(token, shape) {
                ids.push(id.to_owned());
            }
        });
        for id in ids {
            let at = self.add_copy(FactKind::Hash, &id, source, index);
            self.facts[at].in_error_line = true;
        }
    }

    /// Commands and names written in code spans, and `$ command` lines.
    pub(super) fn scan_code(&mut self, text: &'a str, source: Source, index: usize) {
        for span in code_spans(text) {
            let code = span.trim();
            if code.len() < 2 {
                continue;
            }
            let first_word = code.split_whitespace().next().unwrap_or("");
            if COMMAND_WORDS.contains(&first_word) || first_word.starts_with("./") {
                self.add(FactKind::Command, Cow::Borrowed(code), source, index);
            } else if code.split_whitespace().count() <= 3 {
                self.add(FactKind::Name, Cow::Borrowed(code), source, index);
            }
        }
        for line in text.lines() {
            if let Some(command) = line.trim_start().strip_prefix("$ ") {
                let command = command.trim();
                if !command.is_empty() {
                    self.add(FactKind::Command, Cow::Borrowed(command), source, index);
                }
            }
        }
    }

    /// The sentences of the paragraphs of `text` that a label of rules opens (`Constraints: MSRV
    /// stays 1.74 (…). Don't change the public API…`), each a rule though no constraint word marks
    /// it: the user said so (verify22: `MSRV stays 1.74` lost from a summary's constraints, beside
    /// the two sentences after it). Those a constraint word marks are [`Self::sentences`]'.
    pub(super) fn labelled_rules(text: &'a str, index: usize, into: &mut Vec<Sentence<'a>>) {
        let mut at = 0;
        for line in text.split_inclusive('\n') {
            let start = at;
            at += line.len();
            let opening = line.trim_start().trim_start_matches(['-', '*', ' ']);
            let Some(label) = RULE_LABELS.iter().find(|label| {
                opening
                    .get(..label.len())
                    .is_some_and(|start| start.eq_ignore_ascii_case(label))
            }) else {
                continue;
            };
            let from = start + (line.len() - opening.len()) + label.len();
            let paragraph = &text[from..];
            let paragraph = &paragraph[..paragraph.find("\n\n").unwrap_or(paragraph.len())];
            for item in paragraph.split('\n') {
                let item = item.trim().trim_start_matches(['-', '*']).trim();
                let mut rest = item;
                while !rest.is_empty() {
                    let end = rest
                        .match_indices(['.', '!', ';'])
                        .map(|(end, _)| end + 1)
                        .find(|&end| rest[end..].is_empty() || rest[end..].starts_with(' '))
                        .unwrap_or(rest.len());
                    let sentence = rest[..end].trim();
                    rest = &rest[end..];
                    // A sentence the constraint words find is read by `states_a_rule` instead,
                    // but for a `leave` or `keep` that states no rule: under the label it is one
                    // (`Keep the lockfile.`).
                    let marked = states_a_rule(sentence)
                        || CONSTRAINT_WORDS.find_at(sentence, 0).is_some_and(|(start, end)| {
                            let word = &sentence[start..end];
                            !word.eq_ignore_ascii_case("leave") && !word.eq_ignore_ascii_case("keep")
                        });
                    if sentence.len() >= 12
                        && sentence.len() <= MAX_SENTENCE
                        && !marked
                        && !sentence.ends_with('?')
                    {
                        into.push(Sentence {
                            index,
                            text: sentence,
                        });
                    }
                }
            }
        }
    }

    /// The sentences of `text` that name a ticket (`I filed PLAT-7781 for a new base image`): a
    /// later lift naming only the ticket lifts the blocker they describe.
    pub(super) fn ticket_sentences(text: &'a str, index: usize, into: &mut Vec<Sentence<'a>>) {
        for ticket in tickets(text) {
            let start = ticket.as_ptr() as usize - text.as_ptr() as usize;
            let (sentence, _) = sentence_around(text, start, start + ticket.len(), MAX_SENTENCE);
            let sentence = sentence.trim();
            if !into.iter().rev().take(8).any(|seen| seen.text == sentence) {
                into.push(Sentence {
                    index,
                    text: sentence,
                });
            }
        }
    }

    pub(super) fn sentences(text: &'a str, words: &Words, index: usize, into: &mut Vec<Sentence<'a>>) {
        let mut from = 0;
        while let Some((start, found_end)) = words.find_at(text, from) {
            let (sentence, end) = sentence_around(text, start, found_end, MAX_SENTENCE);
            from = end.max(found_end);
            // A list's item without its marker: `- Don't change the schema …` read `- - Don't …`
            // under Constraints (verify45).
            let sentence = sentence.trim();
            let sentence = ["- ", "* ", "• "]
                .iter()
                .find_map(|marker| sentence.strip_prefix(marker))
                .map_or(sentence, str::trim_start);
            if sentence.len() >= 12 && !into.iter().rev().take(8).any(|seen| seen.text == sentence) {
                into.push(Sentence {
                    index,
                    text: sentence,
                });
            }
        }
    }
}

/// Whether `sentence` waits on someone or something the sentence before it named: `We're blocked
/// on KMS until he does.` after `I've asked Marco to add an exception.` (verify41: the lift,
/// `Marco says the SCP exception is in place now`, shared one word with the blocker alone, and
/// it stayed under Blocked).
fn waits_on_someone_named_before(sentence: &str) -> bool {
    const UNTIL: [&str; 8] = [
        " until he ",
        " until she ",
        " until they ",
        " until we hear",
        " until that ",
        " until it ",
        " until then",
        " until this ",
    ];
    sentence.contains(" until ") && {
        let lower = sentence.to_ascii_lowercase();
        UNTIL.iter().any(|until| lower.contains(until))
    }
}

/// Words opening a sentence that leans on the one before it (`Until that lands prod stays
/// blocked.` after `I opened PLAT-2291 for the reader role.`).
const POINTS_BACK: [&str; 10] = [
    "that ",
    "this ",
    "it ",
    "they ",
    "these ",
    "those ",
    "until that ",
    "until then",
    "until it ",
    "which ",
];

/// `sentence` (a slice of `text`), preceded by the sentence before it in `text` when it opens by
/// pointing back to it and both fit in [`MAX_SENTENCE`]: alone, it says what is blocked but not
/// by what.
pub(super) fn with_antecedent<'a>(text: &'a str, sentence: &'a str) -> &'a str {
    let lower = sentence.get(..12).unwrap_or(sentence).to_ascii_lowercase();
    if !POINTS_BACK.iter().any(|word| lower.starts_with(word)) && !waits_on_someone_named_before(sentence) {
        return sentence;
    }
    let Some(offset) = (sentence.as_ptr() as usize).checked_sub(text.as_ptr() as usize) else {
        return sentence;
    };
    let before = text[..offset.min(text.len())].trim_end();
    if !before.ends_with(['.', '!', ':']) {
        return sentence;
    }
    let last = before.len() - 1;
    let (previous, _) = sentence_around(before, last, last + 1, MAX_SENTENCE);
    let previous = previous.trim_start();
    let start = previous.as_ptr() as usize - text.as_ptr() as usize;
    let end = offset + sentence.len();
    // A whole sentence, not the part of one that fit.
    let whole = text[..start].ends_with('\n')
        || text[..start]
            .trim_end()
            .chars()
            .last()
            .is_none_or(|last| matches!(last, '.' | '!' | '?' | ':'));
    if !whole || previous.len() < 12 || end - start > MAX_SENTENCE {
        return sentence;
    }
    &text[start..end]
}

/// `first` and `second`, two slices of `text`, as one slice when `second` goes on from where
/// `first` ends (overlapping it, or after spaces on the same line) and both fit in
/// [`MAX_SENTENCE`].
pub(super) fn run_on<'a>(text: &'a str, first: &'a str, second: &'a str) -> Option<&'a str> {
    let offset = |slice: &str| (slice.as_ptr() as usize).checked_sub(text.as_ptr() as usize);
    let (start, end) = (offset(first)?, offset(first)? + first.len());
    let (second_start, second_end) = (offset(second)?, offset(second)? + second.len());
    if second_end > text.len() || second_start < start || second_end <= end {
        return None;
    }
    let between = text.get(end..second_start.max(end))?;
    (between.trim_start_matches([' ', '\t']).is_empty() && second_end - start <= MAX_SENTENCE)
        .then(|| &text[start..second_end])
}

/// `sentence` (a slice of `text`) followed by the next sentence of `text` when that one names the
/// ticket the block waits on and it does not (`Blocked: the etl_loader role has no INSERT grant …
/// I opened DATA-2291 with the platform team.`, verify18), both within [`MAX_SENTENCE`].
pub(super) fn with_ticket_after<'a>(text: &'a str, sentence: &'a str) -> &'a str {
    let names_ticket = |words: &str| {
        words
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
            .any(is_ticket_key)
    };
    if names_ticket(sentence) {
        return sentence;
    }
    with_next_sentence_if(text, sentence, names_ticket)
}

/// `sentence` (a slice of `text`) followed by the next sentence of `text` when that one says how
/// to work around the block meanwhile (`Blocker: the S3 bucket isn't reachable from your sandbox.
/// Use data/sample/ for now.`): the model reads what to do until it is lifted, and a lift that
/// names the workaround (`you can use that instead of the sample`) is told its blocker (verify42).
pub(super) fn with_workaround_after<'a>(text: &'a str, sentence: &'a str) -> &'a str {
    const MEANWHILE: [&str; 5] = ["for now", "meanwhile", "in the meantime", "until then", "instead"];
    with_next_sentence_if(text, sentence, |next| {
        let lower = next.to_ascii_lowercase();
        MEANWHILE.iter().any(|words| lower.contains(words))
    })
}

/// `sentence` (a slice of `text`) followed by the next sentence of `text`, on the same line, when
/// `fits` it and both fit in [`MAX_SENTENCE`].
fn with_next_sentence_if<'a>(text: &'a str, sentence: &'a str, fits: impl Fn(&str) -> bool) -> &'a str {
    let Some(start) = (sentence.as_ptr() as usize).checked_sub(text.as_ptr() as usize) else {
        return sentence;
    };
    let end = start + sentence.len();
    if end > text.len() {
        return sentence;
    }
    let rest = &text[end..];
    let next_start = end + (rest.len() - rest.trim_start().len());
    if next_start >= text.len() || text[end..next_start].contains('\n') {
        return sentence;
    }
    let (next, _) = sentence_around(text, next_start, next_start + 1, MAX_SENTENCE);
    let next = next.trim();
    let next_end = (next.as_ptr() as usize - text.as_ptr() as usize) + next.len();
    if !fits(next)
        || next_end - start > MAX_SENTENCE
        || !std::ptr::eq(next.as_ptr(), text[next_start..].as_ptr())
    {
        return sentence;
    }
    &text[start..next_end]
}

/// How far a name around an error marker is looked for, either side, in bytes.
const NAME_AROUND: usize = 256;

/// Whether the match at `start..end` of `text` lies in a path or a file name: a word holding a
/// `/`, or ending with an extension (`errors.log`, `audit-exceptions.mjs:`), not a class's dotted
/// name (`java.lang.IllegalStateException`).
fn in_file_name(text: &str, start: usize, end: usize) -> bool {
    let bytes = text.as_bytes();
    let is_boundary = |byte: u8| {
        byte.is_ascii_whitespace() || matches!(byte, b'"' | b'\'' | b'`' | b'\\' | b'(' | b'[' | b'{')
    };
    // Bounded either side, so that a minified bundle's markers cost no more than a line's.
    let floor = ceil_char_boundary(text, start.saturating_sub(NAME_AROUND));
    let ceiling = floor_char_boundary(text, (start + NAME_AROUND).min(bytes.len()));
    let word_start = bytes[floor..start]
        .iter()
        .rposition(|&byte| is_boundary(byte))
        .map_or(floor, |at| floor + at + 1);
    let word_end = bytes[start..ceiling]
        .iter()
        .position(|&byte| is_boundary(byte))
        .map_or(ceiling, |at| start + at);
    // A marker of several words (`FAIL `, `No such file`) is no part of a name.
    if end > word_end {
        return false;
    }
    let word = text[word_start..word_end].trim_end_matches([':', ',', ';', '.', ')', ']', '}']);
    // RSpec's label of a failed expectation (verify44: its failure reduced to `Failed examples:`).
    if word == "Failure/Error" {
        return false;
    }
    if word.contains('/') {
        return true;
    }
    word.rsplit_once('.').is_some_and(|(name, extension)| {
        !name.is_empty()
            && (1..=5).contains(&extension.len())
            && extension
                .bytes()
                .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())
    })
}

/// Whether the match at `start..end` of `text` is a bare key of an object literal in code (`{
/// error: 'invalid' }`): a value a program sets, not an error it met. A quoted key is a tool's
/// JSON answer as often (`{"error": "rate limited"}`), and stays an error.
fn is_object_key(text: &str, start: usize, end: usize) -> bool {
    let before = text[..start].trim_end();
    text[end..].starts_with(':') && (before.ends_with('{') || before.ends_with(','))
}

/// The key `fact` (a slice of `text`) is the value of, in a log's `key=value` (`route=/api/v1/x`).
fn key_before<'t>(text: &'t str, fact: &str) -> Option<&'t str> {
    let at = offset_in(text, fact);
    let before = text.get(..at)?.strip_suffix('=')?;
    let start = before
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
        .map_or(0, |at| at + 1);
    let key = &before[start..];
    (!key.is_empty()).then_some(key)
}

/// Where `part` (a slice of `text`) starts in it.
fn offset_in(text: &str, part: &str) -> usize {
    (part.as_ptr() as usize).saturating_sub(text.as_ptr() as usize)
}

/// Whether a log's `key` holds a request's target (`route=`, `uri=`, `http.target=`): its values
/// are routes, one per line, of one shape.
fn names_a_route(key: &str) -> bool {
    const ROUTE_KEYS: [&str; 5] = ["route", "uri", "endpoint", "target", "request_path"];
    let key = key.to_ascii_lowercase();
    ROUTE_KEYS.iter().any(|route| key.ends_with(route))
}

/// Whether a log's `key` holds an id (`req_id=`, `trace_id=`, `X-Request-Id=`).
fn names_an_id(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.len() > 2 && key.ends_with("id")
}

/// Whether `fact`, a slice of `text`, is the target of an HTTP request line (`"GET
/// /v2/checkout HTTP/1.1"`, `POST /api/orders`): a route, not a file.
fn follows_http_method(text: &str, fact: &str) -> bool {
    let at = fact.as_ptr() as usize - text.as_ptr() as usize;
    let Some(before) = text[..at].strip_suffix(' ') else {
        return false;
    };
    ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]
        .iter()
        .filter_map(|method| before.strip_suffix(method))
        .any(|rest| !rest.ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
}

/// Whether `line` is a table's column headings (tsc's `Errors  Files`): single words apart by
/// runs of spaces, nothing else. It names no error.
fn is_column_headings(line: &str) -> bool {
    // Asked of every error line of a log: nothing is collected.
    if !line.contains("  ") {
        return false;
    }
    let mut columns = 0;
    let words = line
        .split("  ")
        .map(str::trim)
        .filter(|column| !column.is_empty())
        .all(|column| {
            columns += 1;
            column.chars().all(|c| c.is_alphabetic() || c == '_')
        });
    words && columns >= 2
}

/// Whether `line` is a row of a history or status table whose status column says the row's
/// thing did not fail: helm's `40  Mon Dec 1 08:01:02 2026  superseded  checkout-api-3.8.0  3.8.0
/// Upgrade "checkout-api" failed: timed out`, a revision since replaced, printed by a rollback
/// that succeeded (verify39: the rollback listed as Blocked where no exit code said otherwise).
fn is_settled_status_row(line: &str) -> bool {
    const SETTLED: [&str; 8] = [
        "superseded",
        "deployed",
        "succeeded",
        "success",
        "complete",
        "completed",
        "running",
        "healthy",
    ];
    if !line.contains("  ") {
        return false;
    }
    let columns: Vec<&str> = line
        .split("  ")
        .map(str::trim)
        .filter(|column| !column.is_empty())
        .collect();
    columns.len() >= 4
        && columns
            .iter()
            .any(|column| SETTLED.iter().any(|status| column.eq_ignore_ascii_case(status)))
}

/// Whether `line` tells of a fallback a run took and went on after: `Gnuplot not found, using
/// plotters backend` (criterion), `… not found; falling back to …` (verify39: a benchmark that
/// passed listed as Blocked where no exit code said otherwise).
fn reports_a_fallback(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    lower.contains("not found")
        && [
            ", using ",
            "; using ",
            "falling back",
            "fall back to",
            "defaulting to",
            "using default",
        ]
        .iter()
        .any(|fallback| lower.contains(fallback))
}

/// Whether `line` is a heading over counts of errors (`ECC Errors` in `nvidia-smi -q`, `Errors:`):
/// a few capitalised words and no number, which say nothing went wrong (verify40: listed under
/// Errors).
fn names_errors_as_heading(line: &str) -> bool {
    if line.len() > 40 || !(line.contains("Errors") || line.contains("ERRORS")) {
        return false;
    }
    let line = line.strip_suffix(':').unwrap_or(line);
    let words: Vec<&str> = line.split_whitespace().collect();
    words.len() <= 3
        && words.iter().any(|word| matches!(*word, "Errors" | "ERRORS"))
        && words.iter().all(|word| {
            word.starts_with(|c: char| c.is_ascii_uppercase())
                && word.chars().all(|c| c.is_ascii_alphabetic() || c == '-')
        })
}

/// Whether `line` is a test runner's line for a test it skipped, whose title may name an error
/// (`↓ client > surfaces a network error [skipped]`, jest's `○ skipped throws an error when …`,
/// pytest's `test_timeout_error SKIPPED`; verify40: listed under Errors).
fn reports_a_skipped_test(line: &str) -> bool {
    let line = line.trim_start();
    let says_failed = ["FAILED", "failed", "FAIL "]
        .iter()
        .any(|word| line.contains(word));
    !says_failed
        && (line.starts_with("↓ ")
            || line.starts_with("○ skipped ")
            || line.ends_with("[skipped]")
            || line.ends_with("(skipped)")
            || line.starts_with("SKIPPED ")
            || line.contains(" SKIPPED"))
}

/// The score of an error line that names its error and says its message.
pub(super) const TELLING_ERROR: u8 = 3;

/// A runner's closing line after the failure it ran into, which names none of its own: cargo's
/// `error: test failed, to rerun pass \`-p ingest --lib\``.
const RUNNER_TRAILERS: [&str; 3] = [
    "error: test failed, to rerun pass",
    "error: could not compile `",
    "error: process didn't exit successfully",
];

/// How telling an error line is: a named error with its message beats a bare marker, and a
/// runner's trailer says less than the panic before it (verify37: a Blocked `cargo test` quoted
/// `error: test failed, to rerun pass …`, not `panicked at crates/ingest/src/reader.rs:211:9`).
pub(super) fn error_line_score(line: &str) -> u8 {
    if RUNNER_TRAILERS
        .iter()
        .any(|trailer| line.trim_start().starts_with(trailer))
    {
        1
    } else if line.contains("Error:")
        || line.contains("Exception:")
        || line.contains("error[")
        || line.contains("error:")
        // A panic names where it happened (`panicked at crates/ingest/src/reader.rs:211:9`), a
        // test's `... FAILED` only which test.
        || line.contains("panicked at")
    {
        TELLING_ERROR
    } else if line.contains("panicked") || line.contains("FAILED") || line.contains("fatal") {
        2
    } else if line.starts_with("Traceback") {
        0
    } else {
        1
    }
}

/// Whether `line` is a file printer's own complaint (`cat: x.py: No such file or directory`,
/// `sed: -e expression #1, char 3: unknown command`), among the lines of what it printed.
fn is_printers_complaint(line: &str) -> bool {
    ["cat: ", "nl: ", "bat: ", "head: ", "tail: ", "sed: "]
        .iter()
        .any(|prefix| line.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_blocker_keeps_the_ticket_it_waits_on_said_next() {
        let text = "Blocked: the etl_loader role has no INSERT grant on MARTS.ORDERS_DAILY. I opened DATA-2291 with the platform team. Meanwhile fix the 03-22 duplicates.";
        let sentence = &text[..text.find(" I opened").unwrap()];
        assert_eq!(
            with_ticket_after(text, sentence),
            "Blocked: the etl_loader role has no INSERT grant on MARTS.ORDERS_DAILY. I opened DATA-2291 with the platform team."
        );
        // Nothing names a ticket next, or the blocker names its own: as it is.
        let text = "Blocked: the role has no grant. Meanwhile fix the duplicates.";
        let sentence = &text[..text.find(" Meanwhile").unwrap()];
        assert_eq!(with_ticket_after(text, sentence), sentence);
        let text = "Blocked on PLAT-2291. I opened DATA-2291 too.";
        let sentence = &text[..text.find(" I opened").unwrap()];
        assert_eq!(with_ticket_after(text, sentence), sentence);
    }

    #[test]
    fn a_sentence_pointing_back_keeps_the_one_it_points_to() {
        let text = "Ok. I opened PLAT-2291 for the reader role. Until that lands prod stays blocked.";
        let sentence = &text[text.find("Until").unwrap()..];
        assert_eq!(
            with_antecedent(text, sentence),
            "I opened PLAT-2291 for the reader role. Until that lands prod stays blocked."
        );
        // Alone, or pointing nowhere, it is kept as it is.
        assert_eq!(with_antecedent(sentence, sentence), sentence);
        let text = "I opened PLAT-2291. Prod stays blocked.";
        let sentence = &text[text.find("Prod").unwrap()..];
        assert_eq!(with_antecedent(text, sentence), sentence);
        // Two sentences too long for one line keep the one found.
        let text = format!("{}. It is blocked on the role.", "word ".repeat(70));
        let sentence = &text[text.find("It is").unwrap()..];
        assert_eq!(with_antecedent(&text, sentence), sentence);
    }

    #[test]
    fn code_spans_stay_on_one_line_and_within_length() {
        let text = "run `cargo test` then `make lint`; `x` and `a\nb` are not";
        // As the regex `([^`\n]{2,160})` found them: the closing backtick of a span too short to
        // count opens the next one.
        assert_eq!(
            code_spans(text).collect::<Vec<_>>(),
            ["cargo test", "make lint", " and "]
        );
    }

    /// tsc's summary table opens with `Errors  Files` (verify13 N3): headings, no error; its rows
    /// and a message that says `error` in two words are lines.
    #[test]
    fn a_tables_column_headings_are_no_error_line() {
        let mut facts = Facts::default();
        let output =
            "Found 5 errors in 3 files.\n\nErrors  Files\n     2  src/api/users.ts:12\nFailed  to connect\n";
        facts.scan_errors(output, output, Source::ToolOutput, 0);
        let lines: Vec<&str> = facts.facts.iter().map(|fact| fact.text.as_ref()).collect();
        assert!(!lines.contains(&"Errors  Files"), "{lines:?}");
        assert!(lines.contains(&"Found 5 errors in 3 files."), "{lines:?}");
        assert!(is_column_headings("Errors  Files"));
        assert!(!is_column_headings("error: cannot find module"));
        assert!(!is_column_headings("FAILED  tests/test_a.py::test_b"));
    }

    #[test]
    fn words_match_whole_words_ignoring_case() {
        let words = Words::new(&["only", "do not"]);
        assert_eq!(words.find_at("commonly we Do Not", 0), Some((12, 18)));
        assert_eq!(words.find_at("the only one", 0), Some((4, 8)));
        assert_eq!(words.find_at("onlyness", 0), None);
    }
}
