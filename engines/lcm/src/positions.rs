//! A session's stored messages in ingestion order, and where each content sits among them.
//!
//! Ingestion places a context against the store by content: a message is the stored one with the
//! same hash at or after the expected position. A context another engine made (a compressor's
//! kept tail after its summary, a replay whose live tool answer changed) can resume anywhere
//! later in the session, so the search cannot stop at a window; with the index it costs one
//! lookup whatever the session's length, which is also what a genuinely new message costs.
//!
//! Memory: about 16 bytes a message besides the refs (a key and a position); contents stored more
//! than once keep their positions in a list of their own.

use std::{
    collections::HashMap,
    hash::{BuildHasherDefault, Hasher},
    ops::Deref,
};

use crate::store::StoredRef;

/// The keys are already SHA-256 prefixes: hashing them again would only cost time.
#[derive(Default)]
struct Prehashed(u64);

impl Hasher for Prehashed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(byte);
        }
    }

    fn write_i64(&mut self, value: i64) {
        self.0 = value as u64;
    }
}

/// Set in a value of [`Positions::first`]: the rest is an index into [`Positions::repeated`].
const REPEATED: u32 = 1 << 31;

/// The stored messages of one session, indexed by content hash.
#[derive(Debug, Default)]
pub(crate) struct Positions {
    refs: Vec<StoredRef>,
    /// The position of a content stored once, or `REPEATED | i` for one stored more often.
    first: HashMap<i64, u32, BuildHasherDefault<Prehashed>>,
    /// The positions, ascending, of each content stored more than once.
    repeated: Vec<Vec<u32>>,
}

impl Positions {
    /// The index of `refs`, in ingestion order.
    pub(crate) fn new(refs: Vec<StoredRef>) -> Self {
        let mut positions = Self {
            refs: Vec::with_capacity(refs.len()),
            ..Self::default()
        };
        positions.first.reserve(refs.len());
        positions.extend(refs);
        positions
    }

    /// Appends the message stored next.
    pub(crate) fn push(&mut self, stored: StoredRef) {
        let at = u32::try_from(self.refs.len()).expect("fewer than 2^31 messages in a session");
        assert!(at < REPEATED, "fewer than 2^31 messages in a session");
        match self.first.get(&stored.hash).copied() {
            None => {
                self.first.insert(stored.hash, at);
            }
            Some(slot) if slot & REPEATED != 0 => self.repeated[(slot & !REPEATED) as usize].push(at),
            Some(once) => {
                let index = self.repeated.len() as u32;
                self.repeated.push(vec![once, at]);
                self.first.insert(stored.hash, REPEATED | index);
            }
        }
        self.refs.push(stored);
    }

    /// Appends messages stored next, in order.
    pub(crate) fn extend(&mut self, stored: impl IntoIterator<Item = StoredRef>) {
        for stored in stored {
            self.push(stored);
        }
    }

    /// The first position at or after `from` of a message whose hash is `hash`.
    pub(crate) fn find_from(&self, hash: i64, from: usize) -> Option<usize> {
        let slot = *self.first.get(&hash)?;
        if slot & REPEATED == 0 {
            return (slot as usize >= from).then_some(slot as usize);
        }
        let all = &self.repeated[(slot & !REPEATED) as usize];
        let after = all.partition_point(|&at| (at as usize) < from);
        all.get(after).map(|&at| at as usize)
    }

    /// Whether a message whose hash is `hash` is stored anywhere in the session.
    pub(crate) fn holds(&self, hash: i64) -> bool {
        self.first.contains_key(&hash)
    }
}

impl Deref for Positions {
    type Target = [StoredRef];

    fn deref(&self) -> &[StoredRef] {
        &self.refs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(hashes: &[i64]) -> Positions {
        Positions::new(
            hashes
                .iter()
                .enumerate()
                .map(|(at, &hash)| StoredRef {
                    id: at as i64 + 1,
                    hash,
                    tokens: 1,
                })
                .collect(),
        )
    }

    #[test]
    fn finds_the_first_copy_at_or_after_the_cursor() {
        let mut positions = stored(&[7, 8, 7, 9, 7]);
        assert_eq!(positions.find_from(7, 0), Some(0));
        assert_eq!(positions.find_from(7, 1), Some(2));
        assert_eq!(positions.find_from(7, 3), Some(4));
        assert_eq!(positions.find_from(7, 5), None);
        assert_eq!(positions.find_from(8, 1), Some(1));
        assert_eq!(positions.find_from(8, 2), None);
        assert_eq!(positions.find_from(10, 0), None);
        positions.push(StoredRef {
            id: 6,
            hash: 8,
            tokens: 1,
        });
        assert_eq!(positions.find_from(8, 2), Some(5));
        assert!(positions.holds(9) && !positions.holds(10));
        assert_eq!(positions.len(), 6);
    }
}
