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

/// The lines of an earlier summary, by section (`- ` bullets and blank lines removed).
///
/// Text before the first heading and lines under headings the template does not know are dropped;
/// a summary written by a model may carry both.
pub(crate) fn parse_sections(body: &str) -> [Vec<&str>; 9] {
    let mut sections: [Vec<&str>; 9] = Default::default();
    let mut current = None;
    for line in body.lines() {
        if line.starts_with('#') {
            current = Section::from_heading(line);
            continue;
        }
        let Some(section) = current else { continue };
        let item = line
            .trim_start()
            .strip_prefix("- ")
            .unwrap_or(line.trim_start())
            .trim_end();
        if item.is_empty() || item == NONE_ITEM {
            continue;
        }
        // Keep nesting visible: a sub-bullet stays indented so group labels can be told apart.
        let item = if line.starts_with("  ") && line.trim_start().starts_with("- ") {
            &line[..line.trim_end().len()]
        } else {
            item
        };
        sections[section.index()].push(item);
    }
    sections
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
    fn headings_and_sections_agree() {
        for section in Section::ALL {
            assert!(TEMPLATE_HEADINGS.contains(&section.heading()));
        }
    }
}
