//! The summary template: its sections in order, and reading an earlier summary back into them.

/// One section of the summary template.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// `## Goal`: what the user asked for, latest first.
    Goal,
    /// `## Constraints & Preferences`: what the user said must or must not happen.
    Constraints,
    /// `### Done` under `## Progress`.
    Done,
    /// `### In Progress` under `## Progress`.
    InProgress,
    /// `### Blocked` under `## Progress`.
    Blocked,
    /// `## Key Decisions`.
    Decisions,
    /// `## Relevant Files`.
    Files,
    /// `## Next Steps`.
    NextSteps,
    /// `## Critical Context`: errors, commands, URLs, identifiers.
    Critical,
}

/// The template's headings, in the order a summary lists them.
pub const TEMPLATE_HEADINGS: [&str; 10] = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Relevant Files",
    "## Next Steps",
    "## Critical Context",
];

impl Section {
    /// Every section, in template order.
    pub const ALL: [Section; 9] = [
        Section::Goal,
        Section::Constraints,
        Section::Done,
        Section::InProgress,
        Section::Blocked,
        Section::Decisions,
        Section::Files,
        Section::NextSteps,
        Section::Critical,
    ];

    /// The section's heading line.
    pub fn heading(self) -> &'static str {
        match self {
            Section::Goal => "## Goal",
            Section::Constraints => "## Constraints & Preferences",
            Section::Done => "### Done",
            Section::InProgress => "### In Progress",
            Section::Blocked => "### Blocked",
            Section::Decisions => "## Key Decisions",
            Section::Files => "## Relevant Files",
            Section::NextSteps => "## Next Steps",
            Section::Critical => "## Critical Context",
        }
    }

    fn from_heading(line: &str) -> Option<Self> {
        let line = line.trim_end();
        Self::ALL.into_iter().find(|section| section.heading() == line)
    }

    /// Index into per-section arrays.
    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// The items of an earlier summary, by section (`- ` bullets and blank lines removed).
///
/// An item goes on over the lines that follow it up to the next bullet or heading: a request the
/// user wrote on several lines (`…\nLet's record it: Decision 8: …`) is one item, its lines as
/// they were, not a fragment each. Text before the first heading and lines under headings the
/// template does not know are dropped; a summary written by a model may carry both.
pub(crate) fn parse_sections(body: &str) -> [Vec<&str>; 9] {
    let mut sections: [Vec<&str>; 9] = Default::default();
    let mut current = None;
    // Where the section's last item starts in `body`, while lines may still continue it.
    let mut open: Option<usize> = None;
    let mut offset = 0;
    for line in body.split_inclusive('\n') {
        let at = offset;
        offset += line.len();
        let line = line.trim_end();
        if line.starts_with('#') {
            current = Section::from_heading(line);
            open = None;
            continue;
        }
        let Some(section) = current else { continue };
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        let items = &mut sections[section.index()];
        let bullet = trimmed.starts_with("- ");
        if let (false, Some(start), Some(last)) = (bullet, open, items.last_mut()) {
            *last = &body[start..at + line.len()];
            continue;
        }
        // Keep nesting visible: a sub-bullet stays indented so group labels can be told apart.
        let start = if bullet && line.starts_with("  ") {
            at
        } else {
            at + (line.len() - trimmed.len()) + if bullet { 2 } else { 0 }
        };
        let item = &body[start..at + line.len()];
        if item.is_empty() || item == NONE_ITEM {
            open = None;
            continue;
        }
        items.push(item);
        open = Some(start);
    }
    sections
}

/// The conversation's first request as an earlier summary gives it: the oldest of its goal's
/// (listed last), or, when it lists none, its unanswered one. Several summaries folded into one
/// (lcm condenses its leaves, oldest first) give the first's that lists one: a request pinned
/// while the work after it was summarised reaches a later leaf than that work (verify20: a
/// condensed summary's `Goal: (none)`).
pub(crate) fn oldest_request(body: &str) -> Option<&str> {
    let mut starts: Vec<usize> = body
        .match_indices(Section::Goal.heading())
        .map(|(at, _)| at)
        .collect();
    if starts.first() != Some(&0) {
        starts.insert(0, 0);
    }
    starts.push(body.len());
    starts.windows(2).find_map(|bounds| {
        let sections = parse_sections(&body[bounds[0]..bounds[1]]);
        sections[Section::Goal.index()]
            .iter()
            .rev()
            .find(|line| is_goal_request(line))
            .or_else(|| {
                sections[Section::NextSteps.index()]
                    .iter()
                    .find(|line| open_request(line).is_some())
            })
            .copied()
    })
}

/// Whether a goal's line quotes a request of the user's, not an answer, a focus or a count.
pub(crate) fn is_goal_request(line: &str) -> bool {
    !line.starts_with(FOCUS)
        && !line.starts_with(LATEST_ANSWER)
        && !line.starts_with(PINNED_ANSWER)
        && !is_unlisted_note(line)
}

/// Whether a goal's line is the count of the requests it leaves out, written by `add_requests`.
fn is_unlisted_note(line: &str) -> bool {
    line.starts_with('(') && line.ends_with(" earlier requests are not listed)")
}

/// How Goal opens the latest request of the part summarised, answered there: a model reading it
/// must not answer it again (`Latest request: ` until 2026-11-29, still read in earlier
/// summaries).
pub(crate) const LATEST_ANSWERED: &str = "Latest request (answered): ";
const LATEST_BEFORE: &str = "Latest request: ";
/// How Goal opens the latest request of the part summarised when the user's next request came
/// before any answer to it: neither answered nor still in progress.
pub(crate) const LATEST_BEFORE_NEXT: &str = "Latest request before the next: ";

/// How Goal opens an earlier request that asked a question the conversation answered: a model
/// reading it bare answered it again (verify19).
pub(crate) const ANSWERED_QUESTION: &str = "Answered question: ";

/// How Goal opens the answer to the latest request, after it.
pub(crate) const LATEST_ANSWER: &str = "Its answer: ";

/// How Goal opens the answer to the user's newest request when that request is kept verbatim
/// before the summary (pinned after the head) and the answer is summarised: the summary does not
/// quote the request, and without this line its answer was lost (verify21: `which Python version
/// does the docs CI job use?` read bare at the next fold, all 7 formats).
pub(crate) const PINNED_ANSWER: &str = "Answer to the request kept before this summary: ";

/// The request a Goal line quotes, without the label of the latest.
pub(crate) fn goal_request(line: &str) -> &str {
    line.strip_prefix(LATEST_ANSWERED)
        .or_else(|| line.strip_prefix(LATEST_BEFORE_NEXT))
        .or_else(|| line.strip_prefix(LATEST_BEFORE))
        .unwrap_or(line)
}

/// How Next Steps opens the latest request when no answer to it came before the summary's end:
/// unanswered when nothing was done for it yet…
pub(crate) const UNANSWERED: &str = "Unanswered request: ";
/// …in progress when the assistant acted on it (its actions are under In Progress): a request
/// being worked on is not one to start again.
pub(crate) const IN_PROGRESS: &str = "Request in progress: ";

/// How Goal opens the focus topic of a manual `/compress <focus>`.
pub(crate) const FOCUS: &str = "Focus: ";

/// The labels a Goal or Next Steps item opens with, before the text it quotes: a reader that
/// looks for the quoted text (the host's grounding of a model's summary) strips them.
pub const ITEM_LABELS: [&str; 9] = [
    LATEST_ANSWERED,
    ANSWERED_QUESTION,
    LATEST_BEFORE_NEXT,
    LATEST_BEFORE,
    LATEST_ANSWER,
    PINNED_ANSWER,
    UNANSWERED,
    IN_PROGRESS,
    FOCUS,
];

/// What follows the command heading a sub-list of `Errors:`, the lines its run printed
/// (`` - `make ci` printed:``); a later summary moves them all once the command passes.
pub const PRINTED_BY: &str = " printed:";

/// The request an open Next Steps line quotes, without its label.
pub(crate) fn open_request(line: &str) -> Option<&str> {
    line.strip_prefix(UNANSWERED)
        .or_else(|| line.strip_prefix(IN_PROGRESS))
}

/// The line an empty section shows.
pub(crate) const NONE_ITEM: &str = "(none)";

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn sections_are_read_back_by_heading() {
        let body = "intro\n## Goal\n- fix the build\n\n## Progress\n### Done\n- ran tests\n### Blocked\n- (none)\n## Critical Context\n- Errors:\n  - boom\n## Unknown\n- dropped\n";
        let sections = parse_sections(body);
        assert_eq!(sections[Section::Goal.index()], vec!["fix the build"]);
        assert_eq!(sections[Section::Done.index()], vec!["ran tests"]);
        assert!(sections[Section::Blocked.index()].is_empty());
        assert_eq!(sections[Section::Critical.index()], vec!["Errors:", "  - boom"]);
    }

    #[test]
    fn an_item_goes_on_over_its_lines_up_to_the_next_bullet() {
        let body = "## Goal\n- Latest request: plan the drill\n- About the SLO: split it in two.\nLet's record it: Decision 7: owner Priya.\n\n- the first request\n## Critical Context\n- Errors:\n  - boom\n    at line 3\n";
        let sections = parse_sections(body);
        assert_eq!(
            sections[Section::Goal.index()],
            vec![
                "Latest request: plan the drill",
                "About the SLO: split it in two.\nLet's record it: Decision 7: owner Priya.",
                "the first request",
            ]
        );
        assert_eq!(
            sections[Section::Critical.index()],
            vec!["Errors:", "  - boom\n    at line 3"]
        );
    }

    #[test]
    fn a_goal_line_is_read_without_the_latest_requests_label_old_or_new() {
        assert_eq!(goal_request("Latest request (answered): ship it"), "ship it");
        assert_eq!(goal_request("Latest request: ship it"), "ship it");
        assert_eq!(goal_request("ship it"), "ship it");
    }

    #[test]
    fn the_oldest_request_is_the_first_summarys() {
        let one = "## Goal\n- Latest request: b\n- a\n## Next Steps\n- (none)\n";
        assert_eq!(oldest_request(one), Some("a"));
        let folded = format!("## sum_1 (leaf)\n{one}\n\n## sum_2 (leaf)\n## Goal\n- d\n- c\n");
        assert_eq!(oldest_request(&folded), Some("a"));
        let noted = "## Goal\n- b\n- a\n- (12 earlier requests are not listed)\n";
        assert_eq!(oldest_request(noted), Some("a"));
        let unanswered = "## Goal\n- (none)\n## Next Steps\n- Unanswered request: a\n";
        assert_eq!(oldest_request(unanswered), Some("Unanswered request: a"));
    }

    #[test]
    fn headings_and_sections_agree() {
        for section in Section::ALL {
            assert!(TEMPLATE_HEADINGS.contains(&section.heading()));
        }
    }
}
