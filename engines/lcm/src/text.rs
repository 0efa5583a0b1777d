//! The plain text searched in a message, and snippets of it.

use std::ops::Range;

use ctxhost_engine_abi::{Content, Message};

/// What full-text search and regex search see of `message`: its content's text, then each tool
/// call's name and arguments, one per line. Keys, ids and JSON escapes are left out: they are
/// noise to a person searching, and indexing them would grow the store.
pub fn search_text(message: &Message) -> String {
    with_calls(message.text().into_owned(), message)
}

/// [`search_text`] of a message no longer needed: its text is reused, not copied (a tool output
/// is most of what lcm stores).
pub fn into_search_text(mut message: Message) -> String {
    let text = match std::mem::take(&mut message.content) {
        Content::Text(text) => text,
        other => other.text().into_owned(),
    };
    with_calls(text, &message)
}

fn with_calls(mut text: String, message: &Message) -> String {
    for call in message.calls() {
        push_call(&mut text, &call.function.name, &call.function.arguments);
    }
    text
}

/// Appends a tool call's line: its name, then the values of its arguments as they read, each
/// string unescaped (`{"content": "a\nb"}` is `a`, a line break, `b`), keys left out. Arguments
/// that are not JSON are appended as they are.
///
/// Appended as JSON, a file written through a call was searched with its escapes: a word after a
/// `\n` was indexed as `nword`, and snippets showed backslashes.
pub fn push_call(out: &mut String, name: &str, arguments: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(name);
    let start = out.len();
    let mut deserializer = serde_json::Deserializer::from_str(arguments);
    let read = serde::de::DeserializeSeed::deserialize(ArgumentValues(out), &mut deserializer)
        .and_then(|()| deserializer.end());
    if read.is_err() {
        out.truncate(start);
        out.push(' ');
        out.push_str(arguments);
    }
}

/// Appends each scalar of a JSON value to the text, after a space, strings unescaped.
struct ArgumentValues<'o>(&'o mut String);

impl<'de> serde::de::DeserializeSeed<'de> for ArgumentValues<'_> {
    type Value = ();

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ArgumentValues<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<(), E> {
        if !value.is_empty() {
            self.0.push(' ');
            self.0.push_str(value);
        }
        Ok(())
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<(), E> {
        self.visit_str(if value { "true" } else { "false" })
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<(), E> {
        self.visit_str(&value.to_string())
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<(), E> {
        self.visit_str(&value.to_string())
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<(), E> {
        self.visit_str(&value.to_string())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(ArgumentValues(self.0))?.is_some() {}
        Ok(())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<serde::de::IgnoredAny>()?.is_some() {
            map.next_value_seed(ArgumentValues(self.0))?;
        }
        Ok(())
    }
}

/// The words of `text` as the full-text index sees them, lowercased: runs of letters and digits.
/// (SQLite's unicode61 tokenizer also folds diacritics; a word with one is kept as written here,
/// and the index folds it the same way when it is queried.)
pub fn terms(text: &str) -> impl Iterator<Item = std::borrow::Cow<'_, str>> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(|word| {
            if word.chars().any(char::is_uppercase) {
                std::borrow::Cow::Owned(word.to_lowercase())
            } else {
                std::borrow::Cow::Borrowed(word)
            }
        })
}

/// Calls `f` with each of [`terms`]`(text)`, in order, allocating nothing.
///
/// Every stored message goes through this once, when the index catches up with it and adds its
/// words to `terms`, so ASCII text, nearly all of it, is split byte by byte and lowercased into
/// one reused buffer; other text goes through [`terms`].
pub fn for_each_term(text: &str, mut f: impl FnMut(&str)) {
    if !text.is_ascii() {
        return terms(text).for_each(|term| f(&term));
    }
    let mut lowered = String::new();
    for range in ascii_word_ranges(text.as_bytes()) {
        let word = &text[range];
        if word.bytes().any(|byte| byte.is_ascii_uppercase()) {
            lowered.clear();
            lowered.push_str(word);
            lowered.make_ascii_lowercase();
            f(&lowered);
        } else {
            f(word);
        }
    }
}

/// The byte ranges of the runs of ASCII letters and digits in `bytes`, in order.
pub(crate) fn ascii_word_ranges(bytes: &[u8]) -> impl Iterator<Item = Range<usize>> + '_ {
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && !bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        let start = at;
        while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
            at += 1;
        }
        (start < at).then_some(start..at)
    })
}

/// About `width` characters of `text` around the byte range `start..end`, on character
/// boundaries, with `…` where it was cut and whitespace runs folded to one space.
pub fn snippet(text: &str, start: usize, end: usize, width: usize) -> String {
    let start = floor_boundary(text, start.min(text.len()));
    let end = floor_boundary(text, end.min(text.len())).max(start);
    let matched = text[start..end].chars().count();
    let context = width.saturating_sub(matched) / 2;
    let before: usize = text[..start]
        .chars()
        .rev()
        .take(context)
        .map(char::len_utf8)
        .sum();
    let after: usize = text[end..]
        .chars()
        .take(context + (context - before.min(context)))
        .map(char::len_utf8)
        .sum();
    let (from, to) = (start - before, end + after);
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let mut last_space = false;
    for ch in text[from..to].chars() {
        if ch.is_whitespace() {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
        } else {
            out.push(ch);
            last_space = false;
        }
    }
    if to < text.len() {
        out.push('…');
    }
    out
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use ctxhost_engine_abi::ToolCall;

    #[test]
    fn search_text_holds_content_and_calls() {
        let mut message = Message::assistant("running it");
        message.tool_calls = Some(vec![ToolCall::new("c1", "terminal", r#"{"command":"ls"}"#)]);
        assert_eq!(search_text(&message), "running it\nterminal ls");
        assert_eq!(into_search_text(message.clone()), search_text(&message));
        let mut parts = Message::user("");
        parts.content = Content::Parts(vec![
            serde_json::json!({"type": "text", "text": "a"}),
            serde_json::json!({"type": "text", "text": "b"}),
        ]);
        assert_eq!(into_search_text(parts.clone()), "a\nb");
    }

    /// A file written through a call is searched as it reads: a word after a line break is that
    /// word (verify12 F8: `PLAT-5120).\n3. JVM` indexed `n3`, snippets with backslashes).
    #[test]
    fn a_calls_arguments_are_searched_as_their_values_read() {
        let arguments = r#"{"path": "docs/fix.md", "content": "could not read it (PLAT-5120).\n3. JVM \"heap\"", "lines": [1, 2.5, true, null], "opts": {}}"#;
        let message = Message::assistant_calls(vec![ToolCall::new("c1", "write_file", arguments)]);
        assert_eq!(
            search_text(&message),
            "write_file docs/fix.md could not read it (PLAT-5120).\n3. JVM \"heap\" 1 2.5 true"
        );
        let text = search_text(&message);
        let terms: Vec<_> = terms(&text).collect();
        assert!(
            terms.contains(&"3".into()) && !terms.iter().any(|t| t.starts_with("n3")),
            "{terms:?}"
        );
        // Arguments that are not JSON (or not all of it) are searched as written.
        for raw in ["ls -la", "{\"a\": 1} trailing", ""] {
            let message = Message::assistant_calls(vec![ToolCall::new("c1", "f", raw)]);
            assert_eq!(search_text(&message), format!("f {raw}"));
        }
    }

    #[test]
    fn each_term_is_the_same_word_whatever_the_text() {
        for text in [
            "Step 12: please FIX issue #112 in src/mod_12.rs",
            "terminal {\"command\":\"cargo test -p mod_3\"}\nExit code: 1",
            "Größe: ÉTÉ 3 déjà-vu, ΑΒΓ and ascii",
            "",
            "  --  ",
        ] {
            let mut each = Vec::new();
            for_each_term(text, |term| each.push(term.to_owned()));
            let expected: Vec<String> = terms(text).map(|term| term.into_owned()).collect();
            assert_eq!(each, expected, "{text}");
        }
    }

    #[test]
    fn a_snippet_is_cut_around_the_match_on_char_boundaries() {
        let text = format!("{}NEEDLE{}", "é".repeat(300), "x\n\n".repeat(300));
        let at = text.find("NEEDLE").unwrap();
        let cut = snippet(&text, at, at + 6, 40);
        assert!(cut.starts_with('…') && cut.ends_with('…'), "{cut}");
        assert!(cut.contains("NEEDLE"));
        assert!(cut.chars().count() <= 44, "{cut}");
        assert_eq!(snippet("short", 0, 5, 200), "short");
    }
}
