//! Cutting text where a character starts.

/// The largest char boundary of `text` at or below `at` (`str::floor_char_boundary`, which
/// needs a newer Rust than the workspace's 1.86).
pub fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}
