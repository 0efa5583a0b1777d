//! Grounding: a model's summary merged, section by section, with the facts the extractive
//! summarizer found (compressor.md, phase 3), so what survives never depends on the model.
//!
//! [`ground`] is a pure function of its inputs (same input → same output):
//!
//! - the model's lines are read by heading (`## Goal`, `**Next steps:**`… any case, any level);
//!   a code fence around the whole answer, text before the first heading (a preamble) and
//!   "(none)" placeholders are dropped, and lines under a heading the template does not know stay
//!   with the section before it;
//! - every item of the extractive summary (the latest request, constraints, actions, each file,
//!   each error, command, URL and identifier) that the model's kept text does not quote verbatim
//!   is added under its section, in the extractive summary's own layout;
//! - the facts always fit: the model's lines fill the room the facts leave under `max_chars`, in
//!   their order, a line that does not fit being dropped.

use std::borrow::Cow;

use ctxhost_compressor::summary::{Section, TEMPLATE_HEADINGS};

/// The merged summary and how many facts were added to the model's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grounded {
    /// The summary body, every template heading in order.
    pub body: String,
    /// Fact items (lines, or members of a grouped line) added.
    pub facts_added: u64,
}

/// Merges `facts` (an extractive summary body) into `model` (a model's summary), within about
/// `max_chars` characters.
pub fn ground(model: &str, facts: &str, max_chars: usize) -> Grounded {
    let facts = parse_facts(facts);
    let model = parse_model(model);
    // Each heading with its blank line, and a "(none)" line for every section at worst.
    let headings: usize = TEMPLATE_HEADINGS
        .iter()
        .map(|heading| heading.len() + 2)
        .sum::<usize>()
        + Section::ALL.len() * NONE_LINE.len();
    let all_facts: usize = facts.iter().flatten().map(FactItem::cost).sum();
    let mut room = max_chars.saturating_sub(headings + all_facts);
    let mut kept: [Vec<&str>; SLOTS] = Default::default();
    for (slot, lines) in model.iter().enumerate() {
        for line in lines {
            let cost = line.chars().count() + 1;
            if cost <= room {
                room -= cost;
                kept[slot].push(line.as_ref());
            }
        }
    }
    let quoted: String = kept.iter().flatten().copied().collect::<Vec<_>>().join("\n");
    let mut out = String::new();
    let mut facts_added = 0;
    for (slot, heading) in TEMPLATE_HEADINGS.iter().enumerate() {
        if slot > 0
            && !matches!(
                TEMPLATE_HEADINGS[slot - 1],
                "## Progress" | "### Done" | "### In Progress"
            )
        {
            out.push('\n');
        }
        out.push_str(heading);
        out.push('\n');
        let mut written = 0;
        for line in &kept[slot] {
            out.push_str(line);
            out.push('\n');
            written += 1;
        }
        if let Some(section) = section_of(slot) {
            for item in &facts[position_of(section)] {
                let (text, added) = item.render_missing(&quoted);
                out.push_str(&text);
                facts_added += added;
                written += added;
            }
            if written == 0 {
                out.push_str(NONE_LINE);
            }
        }
    }
    out.truncate(out.trim_end().len());
    Grounded {
        body: out,
        facts_added: facts_added as u64,
    }
}

/// What an empty section shows.
const NONE_LINE: &str = "- (none)\n";

/// Slots of the model's summary: one per template heading (`## Progress` holds lines written
/// directly under it).
const SLOTS: usize = TEMPLATE_HEADINGS.len();

fn section_of(slot: usize) -> Option<Section> {
    Section::ALL
        .into_iter()
        .find(|section| section.heading() == TEMPLATE_HEADINGS[slot])
}

/// Position of `section` among [`Section::ALL`].
fn position_of(section: Section) -> usize {
    Section::ALL
        .iter()
        .position(|listed| *listed == section)
        .expect("every section is listed")
}

/// The model's lines by slot; a heading the template does not know (`## Summary`) becomes a line
/// of the section it is in (`Summary:`), so that a later compaction reads it back with the rest.
fn parse_model(text: &str) -> [Vec<Cow<'_, str>>; SLOTS] {
    let mut slots: [Vec<Cow<'_, str>>; SLOTS] = Default::default();
    let mut current = None;
    for line in unwrap_fence(text).lines() {
        if let Some(slot) = heading_slot(line) {
            current = Some(slot);
            continue;
        }
        let Some(slot) = current else { continue };
        let line = line.trim_end();
        if line.trim().is_empty() || is_placeholder(line) {
            continue;
        }
        let line = match markdown_heading(line) {
            Some(name) => Cow::Owned(format!("{}:", name.trim_end_matches(':'))),
            None => Cow::Borrowed(line),
        };
        slots[slot].push(line);
    }
    slots
}

/// Whether `text` names at least one of the template's sections in a heading line, as
/// [`ground`] reads them (`## Goal`, `# next steps`, `**Relevant Files:**`).
pub fn has_template_heading(text: &str) -> bool {
    text.lines().any(|line| heading_slot(line).is_some())
}

/// `text` without a code fence around all of it (small models wrap their answer in one).
fn unwrap_fence(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return text;
    };
    // The opening fence's line may name a language (```markdown).
    let Some((_, body)) = rest.split_once('\n') else {
        return text;
    };
    body.trim_end().strip_suffix("```").unwrap_or(body)
}

/// The text of a Markdown heading line (`## Name`), `None` for other lines (`#481 is open`).
fn markdown_heading(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let rest = trimmed.trim_start_matches('#');
    (rest.len() < trimmed.len() && rest.starts_with(' ')).then(|| rest.trim())
}

/// The slot a heading line names: `## Goal`, `### next steps`, `**Relevant Files:**`, `Goal:`.
fn heading_slot(line: &str) -> Option<usize> {
    let trimmed = line.trim();
    let marked = trimmed.starts_with('#') || trimmed.starts_with("**");
    let name = trimmed
        .trim_start_matches('#')
        .trim()
        .trim_matches('*')
        .trim()
        .trim_end_matches(':')
        .trim_matches('*')
        .trim();
    if !marked && !trimmed.ends_with(':') {
        return None;
    }
    let name = name.to_ascii_lowercase().replace(" and ", " & ");
    TEMPLATE_HEADINGS.iter().position(|heading| {
        heading.trim_start_matches('#').trim().to_ascii_lowercase() == name
            || (name == "constraints" && *heading == "## Constraints & Preferences")
    })
}

fn is_placeholder(line: &str) -> bool {
    let item = line
        .trim()
        .trim_start_matches(['-', '*'])
        .trim()
        .to_ascii_lowercase();
    matches!(item.as_str(), "(none)" | "none" | "none." | "n/a" | "(n/a)" | "-")
}

/// One item of the extractive summary.
#[derive(Clone, Debug, PartialEq, Eq)]
enum FactItem {
    /// `- text`.
    Line(String),
    /// `- Errors:` / `- Errors fixed since:` / `- Lines of files read that mention errors:` /
    /// `- Commands:` / `- Commands mentioned:` with one `  - member` per line.
    Block { label: String, members: Vec<String> },
    /// `- URLs: a, b` / `- Hashes: …` / ``- Names: `a`, `b` ``.
    Inline { label: String, members: Vec<String> },
}

impl FactItem {
    /// Characters it takes when written whole.
    fn cost(&self) -> usize {
        match self {
            Self::Line(text) => text.chars().count() + 3,
            Self::Block { label, members } => {
                label.len() + 3 + members.iter().map(|m| m.chars().count() + 7).sum::<usize>()
            }
            Self::Inline { label, members } => {
                label.len() + 4 + members.iter().map(|m| m.chars().count() + 4).sum::<usize>()
            }
        }
    }

    /// The lines of this item that `quoted` lacks, and how many facts they hold.
    fn render_missing(&self, quoted: &str) -> (String, usize) {
        match self {
            Self::Line(text) if quoted.contains(key_of(text)) => (String::new(), 0),
            Self::Line(text) => (format!("- {text}\n"), 1),
            Self::Block { label, members } => {
                let missing: Vec<&String> = members
                    .iter()
                    .filter(|member| !quoted.contains(member.trim_matches('`')))
                    .collect();
                if missing.is_empty() {
                    return (String::new(), 0);
                }
                let mut out = format!("- {label}\n");
                for member in &missing {
                    out.push_str(&format!("  - {member}\n"));
                }
                (out, missing.len())
            }
            Self::Inline { label, members } => {
                let missing: Vec<&str> = members
                    .iter()
                    .map(String::as_str)
                    .filter(|member| !quoted.contains(member.trim_matches('`')))
                    .collect();
                if missing.is_empty() {
                    return (String::new(), 0);
                }
                (format!("- {label} {}\n", missing.join(", ")), missing.len())
            }
        }
    }
}

/// What must appear verbatim for a line to count as quoted: a file line's path, a request's text,
/// else the whole line (without a cut mark).
fn key_of(text: &str) -> &str {
    let text = ctxhost_compressor::ITEM_LABELS
        .iter()
        .find_map(|label| text.strip_prefix(label))
        .unwrap_or(text);
    let text = text.trim_end_matches('…');
    match text.split_once(" (") {
        Some((path, verbs))
            if !path.contains(' ')
                && verbs
                    .trim_end_matches(')')
                    .split(", ")
                    .all(|verb| matches!(verb, "read" | "searched" | "changed")) =>
        {
            path
        }
        _ => text,
    }
}

/// Whether `member` heads a sub-list of error lines (`` `make ci` printed:``).
fn is_sub_list_heading(member: &str) -> bool {
    let member = member.trim_end();
    member.starts_with('`') && member.ends_with(&format!("`{}", ctxhost_compressor::PRINTED_BY))
}

/// The extractive summary's items by section (in [`Section::ALL`] order).
fn parse_facts(body: &str) -> [Vec<FactItem>; 9] {
    let mut sections: [Vec<FactItem>; 9] = Default::default();
    let mut current: Option<usize> = None;
    for line in body.lines() {
        if line.starts_with('#') {
            current = Section::ALL
                .iter()
                .position(|section| section.heading() == line.trim_end());
            continue;
        }
        let Some(section) = current else { continue };
        let items = &mut sections[section];
        // A sub-list of error lines under the command that printed them: its heading names the
        // command, not an error; its lines are members of `Errors:` like the others.
        let member = line.strip_prefix("    - ").or_else(|| {
            line.strip_prefix("  - ")
                .filter(|member| !is_sub_list_heading(member))
        });
        if line.starts_with("  - ") && member.is_none() {
            continue;
        }
        if let Some(member) = member {
            if let Some(FactItem::Block { members, .. }) = items.last_mut() {
                members.push(member.trim_end().to_owned());
            } else {
                items.push(FactItem::Line(member.trim_end().to_owned()));
            }
            continue;
        }
        let Some(text) = line.strip_prefix("- ").map(str::trim_end) else {
            continue;
        };
        if text == "(none)" {
            continue;
        }
        if matches!(
            text,
            "Errors:"
                | "Errors fixed since:"
                | "Lines of files read that mention errors:"
                | "Commands:"
                | "Commands mentioned:"
        ) {
            items.push(FactItem::Block {
                label: text.to_owned(),
                members: Vec::new(),
            });
            continue;
        }
        let inline = [
            "URLs:",
            "Routes:",
            "Hashes:",
            "Ids:",
            "Issues:",
            "Versions:",
            "Identifiers:",
            "Names:",
        ]
        .into_iter()
        .find(|label| text.starts_with(&format!("{label} ")));
        match inline {
            Some(label) => items.push(FactItem::Inline {
                label: label.to_owned(),
                members: text[label.len() + 1..]
                    .split(", ")
                    .filter(|member| !member.is_empty())
                    .map(str::to_owned)
                    .collect(),
            }),
            None => items.push(FactItem::Line(text.to_owned())),
        }
    }
    sections
}

#[cfg(test)]
mod tests;
