//! Settings keys a person most likely meant: one rule for the host's sections and the engines'
//! blocks, so that a mistyped key is named the same way wherever it is written.

use serde_json::Value;

/// How alike (Jaro-Winkler) an unknown key must be to a known one to be taken for a typo of it.
/// Far enough to leave other programs' keys that share a section alone (Hermes's
/// `model.provider`), close enough for a dropped, doubled or swapped letter.
const TYPO_SIMILARITY: f64 = 0.88;

/// The known key `name` is most likely a typo of, if any is that close.
pub fn closest_key<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|candidate| (strsim::jaro_winkler(name, candidate), *candidate))
        .filter(|(score, _)| *score >= TYPO_SIMILARITY)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, closest)| closest)
}

/// For an engine's config `block`: each key it does not know that is spelt like one it does, with
/// that key, as a warning to show (`lcm.databse: unknown setting, ignored; did you mean
/// \`lcm.database\`?`). Keys unlike any known one are not listed: a block may hold settings of
/// another version of the engine.
pub fn misspelt_keys(engine: &str, block: &Value, known: &[&str]) -> Vec<String> {
    let Value::Object(map) = block else {
        return Vec::new();
    };
    map.keys()
        .filter(|key| !known.contains(&key.as_str()))
        .filter_map(|key| {
            closest_key(key, known).map(|closest| {
                format!("{engine}.{key}: unknown setting, ignored; did you mean `{engine}.{closest}`?")
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_key_one_slip_away_from_a_known_one_is_named_and_others_are_left_alone() {
        let known = ["database", "threshold", "fresh_tail"];
        let block = json!({"databse": "x", "treshold": 0.5, "fresh_tail": 3, "colour": "blue"});
        assert_eq!(
            misspelt_keys("lcm", &block, &known),
            [
                "lcm.databse: unknown setting, ignored; did you mean `lcm.database`?",
                "lcm.treshold: unknown setting, ignored; did you mean `lcm.threshold`?",
            ]
        );
        assert_eq!(misspelt_keys("lcm", &Value::Null, &known), Vec::<String>::new());
        assert_eq!(
            closest_key("context_lenght", &["context_length", "max_tokens"]),
            Some("context_length")
        );
        assert_eq!(
            closest_key("provider", &["context_length", "max_tokens", "default"]),
            None
        );
    }
}
