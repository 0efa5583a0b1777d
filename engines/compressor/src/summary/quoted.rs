//! Which facts a line quotes verbatim: every occurrence of every fact's text in a line.
//!
//! An Aho-Corasick automaton over the facts gave the same answer, but building it for the thousand
//! or so facts of a middle took a third of each compaction of a long replay (1 ms of 3, measured on
//! the heavy session's `run`), and the facts are new at every compaction. Here a fact is found by
//! where it ends instead:
//!
//! - facts are grouped in one hash map by their last bytes (up to 8, as a number);
//! - a bitmap over the last two bytes of every fact rejects most positions of a line at once,
//!   and a table over a hash of the last three bytes most of the rest (in a summary's lines,
//!   most positions end like some fact: `.py`, digits);
//! - at the positions it lets through, only the key lengths of the facts that end like that (the
//!   table holds them as bits) are looked up, and a fact whose key matches is compared whole:
//!   looking up every key length in use was most of the search.
//!
//! Building costs one map insertion per fact; a search costs a bitmap test per byte of the line,
//! plus a comparison per candidate end. Overlapping occurrences are all reported, as the automaton's
//! overlapping search did.

use crate::scan::FastMap;

/// The most bytes of a fact's end used as its key.
const KEY_BYTES: usize = 8;

/// Facts, indexed by how they end.
pub(crate) struct QuotedFacts<'f> {
    facts: &'f [&'f str],
    /// Facts by (key length, last bytes as a little-endian number).
    by_end: FastMap<(usize, u64), Vec<usize>>,
    /// The key lengths in use, ascending.
    key_lengths: Vec<usize>,
    /// Bit `b0 | b1 << 8` is set when a fact of two or more bytes ends with bytes `b0 b1`.
    two_byte_ends: Vec<u64>,
    /// At [`three_byte_slot`] of its last three bytes, bit `key length - 3` is set for every fact
    /// of three bytes or more.
    three_byte_lengths: Vec<u8>,
    /// Some fact is shorter than three bytes.
    has_short: bool,
    /// Facts of a single byte, by that byte.
    one_byte: [bool; 256],
}

impl<'f> QuotedFacts<'f> {
    /// An index of `facts` (empty ones are never found).
    pub(crate) fn new(facts: &'f [&'f str]) -> Self {
        let mut index = Self {
            facts,
            by_end: FastMap::default(),
            key_lengths: Vec::new(),
            two_byte_ends: vec![0; (1 << 16) / 64],
            three_byte_lengths: vec![0; 1 << THREE_BYTE_BITS],
            has_short: false,
            one_byte: [false; 256],
        };
        for (id, fact) in facts.iter().enumerate() {
            let bytes = fact.as_bytes();
            let length = bytes.len().min(KEY_BYTES);
            match bytes {
                [] => continue,
                [only] => index.one_byte[usize::from(*only)] = true,
                [.., before, last] => {
                    let bit = usize::from(*before) | usize::from(*last) << 8;
                    index.two_byte_ends[bit / 64] |= 1 << (bit % 64);
                }
            }
            match bytes {
                [.., a, b, c] => index.three_byte_lengths[three_byte_slot(*a, *b, *c)] |= 1 << (length - 3),
                _ => index.has_short = true,
            }
            if !index.key_lengths.contains(&length) {
                index.key_lengths.push(length);
            }
            index
                .by_end
                .entry((length, key(&bytes[bytes.len() - length..])))
                .or_default()
                .push(id);
        }
        index.key_lengths.sort_unstable();
        index
    }

    /// Calls `found` with the id of every fact `text` quotes, once per occurrence.
    pub(crate) fn for_each_in(&self, text: &str, mut found: impl FnMut(usize)) {
        let bytes = text.as_bytes();
        for end in 1..=bytes.len() {
            let last = bytes[end - 1];
            let ends_two = end >= 2 && {
                let bit = usize::from(bytes[end - 2]) | usize::from(last) << 8;
                self.two_byte_ends[bit / 64] & (1 << (bit % 64)) != 0
            };
            if !ends_two && !self.one_byte[usize::from(last)] {
                continue;
            }
            // The key lengths of the facts of three bytes or more that end with these three bytes.
            let lengths = if end >= 3 {
                self.three_byte_lengths[three_byte_slot(bytes[end - 3], bytes[end - 2], last)]
            } else {
                0
            };
            if lengths == 0 && !self.has_short {
                continue;
            }
            for &length in self.key_lengths.iter().take_while(|&&length| length <= end) {
                if length >= 3 && lengths & (1 << (length - 3)) == 0 {
                    continue;
                }
                let Some(ids) = self.by_end.get(&(length, key(&bytes[end - length..end]))) else {
                    continue;
                };
                for &id in ids {
                    if bytes[..end].ends_with(self.facts[id].as_bytes()) {
                        found(id);
                    }
                }
            }
        }
    }
}

/// Slots of the three-byte table: 64 K, 64 KB.
const THREE_BYTE_BITS: u32 = 16;

/// Where the three bytes `a b c` fall in the three-byte table (a multiplicative hash).
fn three_byte_slot(a: u8, b: u8, c: u8) -> usize {
    let word = u32::from(a) | u32::from(b) << 8 | u32::from(c) << 16;
    (word.wrapping_mul(0x9E37_79B1) >> (32 - THREE_BYTE_BITS)) as usize
}

/// Up to eight bytes as a number.
fn key(bytes: &[u8]) -> u64 {
    let mut word = [0u8; KEY_BYTES];
    word[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests {
    use super::*;
    use aho_corasick::AhoCorasick;
    use pretty_assertions::assert_eq;

    fn found(facts: &[&str], text: &str) -> Vec<usize> {
        let mut ids = Vec::new();
        QuotedFacts::new(facts).for_each_in(text, |id| ids.push(id));
        ids.sort_unstable();
        ids
    }

    #[test]
    fn every_fact_a_line_holds_is_found_once_per_occurrence() {
        let facts = [
            "src/x.py",
            "3.7.9",
            "https://example.com/a",
            "x",
            "",
            "pytest -q src/x.py",
        ];
        assert_eq!(
            found(&facts, "ran `pytest -q src/x.py` with warehouse-client-3.7.9"),
            vec![0, 1, 3, 5]
        );
        // Verbatim means as a substring: the URL's longer sibling and the `x` of `example` count.
        assert_eq!(found(&facts, "see https://example.com/ab"), vec![2, 3]);
        assert_eq!(found(&facts, "src/x.p, x"), vec![3, 3]);
        assert_eq!(found(&facts, "nothing here"), Vec::<usize>::new());
    }

    /// Property: the same occurrences as an overlapping Aho-Corasick search, on text made of a
    /// small alphabet so that facts overlap, nest and share their ends.
    #[test]
    fn every_occurrence_an_automaton_finds_is_found() {
        let mut rng = crate::tests::property::Rng::new(5);
        let mut below = |bound: usize| rng.below(bound);
        let alphabet = ['a', 'b', '/', '.', '1', 'é'];
        for round in 0..600 {
            let mut word =
                |length: usize| -> String { (0..length).map(|_| alphabet[below(alphabet.len())]).collect() };
            // Every other round, no fact is shorter than three bytes (no short facts to look for at
            // positions the three-byte bitmap rejects).
            let shortest = if round % 2 == 0 { 1 } else { 3 };
            let facts: Vec<String> = (0..12).map(|at| word(shortest + at % 11)).collect();
            let text = word(80);
            let facts: Vec<&str> = facts.iter().map(String::as_str).collect();
            let automaton = AhoCorasick::new(&facts).unwrap();
            let mut expected: Vec<usize> = automaton
                .find_overlapping_iter(&text)
                .map(|m| m.pattern().as_usize())
                .collect();
            expected.sort_unstable();
            assert_eq!(found(&facts, &text), expected, "{facts:?} in {text:?}");
        }
    }
}
