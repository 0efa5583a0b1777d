use pretty_assertions::assert_eq;

use super::*;

/// An extractive summary as `ExtractiveSummarizer` writes it.
const FACTS: &str = "## Goal
- Latest request: Now add a CHANGELOG.md entry for issue #481.
- Fix the coupon discount in src/coupons/apply.py.

## Constraints & Preferences
- never touch migrations/

## Progress
### Done
- [terminal] ran `pytest -q` -> exit 1, 22 lines output
### In Progress
- (none)
### Blocked
- (none)

## Key Decisions
- (none)

## Relevant Files
- src/coupons/apply.py (read, changed)
- src/coupons/rules.py (read)

## Next Steps
- (none)

## Critical Context
- Errors:
  - AssertionError: expected 90.0, got 100.0
- Commands:
  - `pytest -q`
  - `git diff`
- Identifiers: #481, v2.3.1";

#[test]
fn a_thin_model_summary_gets_every_fact_in_its_section() {
    let grounded = ground("## Goal\nFix the coupon discount.", FACTS, 10_000);
    assert_eq!(
        grounded.body,
        "## Goal
Fix the coupon discount.
- Latest request: Now add a CHANGELOG.md entry for issue #481.
- Fix the coupon discount in src/coupons/apply.py.

## Constraints & Preferences
- never touch migrations/

## Progress
### Done
- [terminal] ran `pytest -q` -> exit 1, 22 lines output
### In Progress
- (none)
### Blocked
- (none)

## Key Decisions
- (none)

## Relevant Files
- src/coupons/apply.py (read, changed)
- src/coupons/rules.py (read)

## Next Steps
- (none)

## Critical Context
- Errors:
  - AssertionError: expected 90.0, got 100.0
- Commands:
  - `pytest -q`
  - `git diff`
- Identifiers: #481, v2.3.1"
    );
    assert_eq!(grounded.facts_added, 11);
}

#[test]
fn grounding_is_deterministic() {
    let model = "Here is the summary:\n## Next Steps\n- add the entry\n## Goal\n- fix it";
    assert_eq!(ground(model, FACTS, 10_000), ground(model, FACTS, 10_000));
}

#[test]
fn facts_the_model_quoted_are_not_repeated() {
    let model = "## Goal\n- Now add a CHANGELOG.md entry for issue #481.\n\n## Relevant Files\n- `src/coupons/apply.py`: the discount is applied after rounding\n\n## Critical Context\n- `pytest -q` fails with AssertionError: expected 90.0, got 100.0";
    let grounded = ground(model, FACTS, 10_000);
    let body = &grounded.body;
    assert_eq!(
        body.matches("src/coupons/apply.py (read, changed)").count(),
        0,
        "{body}"
    );
    assert_eq!(body.matches("Now add a CHANGELOG.md entry").count(), 1, "{body}");
    assert!(body.contains("- src/coupons/rules.py (read)"), "{body}");
    assert!(!body.contains("- Errors:"), "{body}");
    assert!(body.contains("- Commands:\n  - `git diff`\n"), "{body}");
    assert!(!body.contains("  - `pytest -q`"), "{body}");
    assert!(body.contains("- Identifiers: v2.3.1"), "{body}");
}

#[test]
fn loose_headings_are_recognised_and_preambles_dropped() {
    let model = "Sure, here it is.\n**Goal:**\n- fix the coupon\n### next steps\n- ship it\nConstraints:\n- be quick\n## Summary\n- extra notes";
    let body = ground(model, "## Goal\n- (none)", 10_000).body;
    assert!(!body.contains("Sure, here"), "{body}");
    assert!(
        body.starts_with("## Goal\n- fix the coupon\n\n## Constraints & Preferences\n"),
        "{body}"
    );
    assert!(
        body.contains("## Constraints & Preferences\n- be quick\nSummary:\n- extra notes\n"),
        "{body}"
    );
    assert!(body.contains("## Next Steps\n- ship it\n"), "{body}");
}

#[test]
fn every_heading_is_written_in_order_even_for_an_empty_model_section() {
    let body = ground("## Goal\n- x", "", 10_000).body;
    let headings: Vec<&str> = body.lines().filter(|line| line.starts_with('#')).collect();
    assert_eq!(headings, TEMPLATE_HEADINGS);
    assert!(body.contains("## Key Decisions\n- (none)\n"), "{body}");
}

#[test]
fn the_facts_always_fit_and_the_model_fills_what_is_left() {
    let long: String = (0..200).map(|n| format!("- model line {n}\n")).collect();
    let model = format!("## Goal\n{long}");
    let grounded = ground(&model, FACTS, 1_200);
    let body = &grounded.body;
    assert!(body.chars().count() <= 1_200, "{} chars", body.chars().count());
    assert!(body.contains("- model line 0\n"), "{body}");
    assert!(!body.contains("- model line 199"), "{body}");
    for fact in [
        "src/coupons/rules.py",
        "AssertionError",
        "`git diff`",
        "v2.3.1",
        "never touch migrations/",
    ] {
        assert!(body.contains(fact), "{fact}: {body}");
    }
}

#[test]
fn a_fence_around_the_whole_answer_is_dropped() {
    let body = ground(
        "```markdown\n## Goal\n- fix it\n## Critical Context\n- boom\n```",
        "",
        10_000,
    )
    .body;
    assert!(body.starts_with("## Goal\n- fix it\n"), "{body}");
    assert!(body.ends_with("## Critical Context\n- boom"), "{body}");
    let unclosed = ground("```\n## Goal\n- fix it", "", 10_000).body;
    assert!(unclosed.starts_with("## Goal\n- fix it\n"), "{unclosed}");
}

#[test]
fn template_headings_are_recognised_at_any_level_and_in_any_case() {
    for text in [
        "## Goal\n- x",
        "# goal\n- x",
        "**Next Steps:**\n- x",
        "Relevant files:\n- a.py",
        "### Done",
    ] {
        assert!(has_template_heading(text), "{text}");
    }
    for text in [
        "Goal is to fix it",
        "# What was done?",
        "```python\n# This is a summary of the goal.\n```",
        "- Done: yes",
    ] {
        assert!(!has_template_heading(text), "{text}");
    }
}

/// The lists the extractive summary writes today (hashes, issues, versions, routes; errors fixed
/// since, lines of files read that mention errors) are grounded member by member, as URLs are: a model that quoted one hash gets only the
/// other added, not the whole list again.
#[test]
fn every_list_of_the_extractive_summary_is_grounded_member_by_member() {
    let facts = "## Critical Context
- Errors fixed since:
  - src/a.ts(3,1): error TS2304: Cannot find name 'x'.
  - src/b.ts(9,2): error TS2339: Property 'y' does not exist on type 'Z'.
- Lines of files read that mention errors:
  - 29	    } catch (error) {
  - 30	      this.setState({ error, loading: false });
- Hashes: 0454f31, 9c75bd7
- Routes: /v2/orders, /v2/carts
- Issues: #812, INC-4471";
    let model = "## Critical Context\n- Rolled back from 9c75bd7; /v2/orders is healthy again (#812). src/a.ts(3,1): error TS2304: Cannot find name 'x'. UserCard.jsx: `29\t    } catch (error) {`";
    let body = ground(model, facts, 10_000).body;
    assert!(body.contains("- Hashes: 0454f31\n"), "{body}");
    assert!(body.contains("- Routes: /v2/carts\n"), "{body}");
    assert!(body.contains("- Issues: INC-4471"), "{body}");
    assert!(
        body.contains("- Errors fixed since:\n  - src/b.ts(9,2): error TS2339"),
        "{body}"
    );
    assert!(!body.contains("  - src/a.ts(3,1)"), "{body}");
    assert!(
        body.contains("- Lines of files read that mention errors:\n  - 30\t      this.setState"),
        "{body}"
    );
    assert!(!body.contains("  - 29\t"), "{body}");
}

/// Error lines listed under the command that printed them are grounded one by one as the others
/// are; the sub-list's heading names a command, not an error, and is no member.
#[test]
fn error_lines_under_their_command_are_members_of_errors() {
    let facts = "## Critical Context
- Errors:
  - RuntimeError: worker lost
  - `make ci` printed:
    - FAILED tests/test_invoice.py::test_rounding - AssertionError
    - 1 failed, 204 passed
- Commands:
  - `make ci`";
    let model = "## Critical Context\n- make ci fails: 1 failed, 204 passed. Ran `make ci`.";
    let body = ground(model, facts, 10_000).body;
    assert!(
        body.contains("- Errors:\n  - RuntimeError: worker lost\n  - FAILED tests/test_invoice.py::test_rounding - AssertionError"),
        "{body}"
    );
    assert!(!body.contains("printed:"), "{body}");
    assert!(!body.contains("  - 1 failed, 204 passed"), "{body}");
}
