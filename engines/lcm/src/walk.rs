//! Stored messages newest first, until a deadline: how `lcm_grep` reads the `messages` table.
//!
//! No index serves an arbitrary regex, and 2 cores cannot read a million messages in 100 ms, so a
//! search stops at its deadline and says how far it got: every message from the newest searched
//! down to the oldest searched was searched, and a later call continues below that. A search
//! that finishes in time answers exactly what an unbounded one would.
//!
//! Candidates from the full-text index are taken in windows of message ids, newest first: a
//! small window first (common words fill the limit in it), then each as wide as the time left
//! pays for at the cost per id the last one measured (at most [`GROWTH`] times wider). A window
//! asks FTS5 for its rowids alone. FTS5 honours a rowid range by seeking, but when the query
//! holds a phrase it checks candidates past the range's far end until one matches (SQLite 3.50,
//! `sqlite3Fts5ExprNext`): a phrase of common words that matches nothing reads everything beyond
//! the window that way. So a phrase's window is read upwards, where that stops at the oldest
//! match already seen or the newest message; or, once the time left pays for it, downwards in
//! one window to the oldest message, which is what reading down costs anyway.

use std::time::{Duration, Instant};

use rusqlite::{params, Connection, Row};

use crate::search::Query;

/// The first window of message ids read from the full-text index.
const FIRST_WINDOW: i64 = 4_096;

/// No window is narrower than this: fewer ids than this are not worth a query.
const MIN_WINDOW: i64 = 512;

/// Each window is at most this many times wider than the one before: the cost per id measured on
/// a narrow window may not hold for a much wider one.
const GROWTH: i64 = 16;

/// The share of the time left a window is sized to take, the rest being the error of its
/// estimate.
const SAFETY: f64 = 0.85;

/// The deadline is looked at after this many rows.
const CHECK_EVERY: u64 = 16;

/// Which messages are candidates.
#[derive(Clone, Copy, Debug)]
pub enum Candidates<'a> {
    /// Every stored message.
    Every,
    /// Those this FTS5 query matches.
    Matching(&'a str),
}

/// Where a walk stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reached {
    /// Every message it was asked about was searched.
    Everything,
    /// The visitor had enough.
    Enough,
    /// The deadline came: the messages with ids from `newest` down to `oldest` were searched.
    Deadline {
        /// The newest message id searched.
        newest: i64,
        /// The oldest message id searched; a later search continues below it.
        oldest: i64,
        /// The newest id in the store: messages are numbered from 1 and never deleted, so also
        /// how many it holds.
        stored: i64,
    },
}

/// The columns each visited row holds, in this order.
pub const COLUMNS: &str = "m.id, m.role, m.created_at, m.json";

const FILTERS: &str = "(?1 IS NULL OR m.session_id = ?1) AND (?2 IS NULL OR m.created_at >= ?2) \
                       AND (?3 IS NULL OR m.created_at < ?3)";

/// Calls `visit` with each message of `query`'s session and time range below its `before_id`
/// that `candidates` holds, newest first ([`COLUMNS`]), until `visit` returns `false`, none is
/// left, or `budget` has passed (a walk always searches some messages, so that a search
/// continued call after call ends).
pub fn newest_first(
    conn: &Connection,
    query: &Query,
    candidates: Candidates<'_>,
    budget: Duration,
    visit: &mut dyn FnMut(&Row<'_>) -> rusqlite::Result<bool>,
) -> rusqlite::Result<Reached> {
    // A budget too long to add to the clock is as good as none (a year is already none).
    let deadline = Instant::now()
        .checked_add(budget)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 86_400));
    // One read transaction for the whole walk: one snapshot, and one lock taken instead of one
    // per statement (each candidate is a statement of its own; taking and dropping the lock was
    // a few `fcntl` and `fstat` calls each time).
    let _snapshot = if conn.is_autocommit() {
        Some(conn.unchecked_transaction()?)
    } else {
        None
    };
    let newest_stored: i64 =
        conn.query_row("SELECT coalesce(max(id), 0) FROM messages", [], |row| row.get(0))?;
    let top = query
        .before_id
        .map_or(newest_stored, |before| newest_stored.min(before - 1));
    if top < 1 {
        return Ok(Reached::Everything);
    }
    let walk = Walk {
        conn,
        query,
        top,
        newest_stored,
        deadline,
    };
    match candidates {
        Candidates::Every => walk.scan(visit),
        Candidates::Matching(fts) => walk.windows(fts, visit),
    }
}

/// One walk: from `top` down, until `deadline`.
struct Walk<'a> {
    conn: &'a Connection,
    query: &'a Query,
    top: i64,
    newest_stored: i64,
    deadline: Instant,
}

/// The next window of ids below the last and the order to read it in.
struct Plan {
    lo: i64,
    ascending: bool,
    /// The ids FTS5 may read for it.
    reads: i64,
}

impl Walk<'_> {
    /// Out of time, every message from `top` down to `oldest` searched.
    fn stopped_at(&self, oldest: i64) -> Reached {
        Reached::Deadline {
            newest: self.top,
            oldest,
            stored: self.newest_stored,
        }
    }

    /// Whether to stop after the `seen`th row, `id`, was searched.
    fn out_of_time(&self, seen: u64, id: i64) -> bool {
        seen.is_multiple_of(CHECK_EVERY) && id > 1 && Instant::now() >= self.deadline
    }

    fn scan(&self, visit: &mut dyn FnMut(&Row<'_>) -> rusqlite::Result<bool>) -> rusqlite::Result<Reached> {
        let (conn, query, top) = (self.conn, self.query, self.top);
        let mut statement = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages m WHERE m.id <= ?4 AND {FILTERS} ORDER BY m.id DESC"
        ))?;
        let mut rows = statement.query(params![query.session, query.since, query.before, top])?;
        let mut seen = 0u64;
        while let Some(row) = rows.next()? {
            if !visit(row)? {
                return Ok(Reached::Enough);
            }
            seen += 1;
            let id: i64 = row.get(0)?;
            if self.out_of_time(seen, id) {
                return Ok(self.stopped_at(id));
            }
        }
        Ok(Reached::Everything)
    }

    fn windows(
        &self,
        fts: &str,
        visit: &mut dyn FnMut(&Row<'_>) -> rusqlite::Result<bool>,
    ) -> rusqlite::Result<Reached> {
        let (conn, query, deadline) = (self.conn, self.query, self.deadline);
        let mut message = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM messages m WHERE m.id = ?4 AND {FILTERS}"
        ))?;
        let phrase = has_phrase(fts);
        let mut ids = Vec::new();
        let mut hi = self.top;
        let mut width = FIRST_WINDOW;
        // Seconds per id read, reading and checking included, as the last window cost.
        let mut cost: Option<f64> = None;
        // The oldest id FTS5 matched so far: reading upwards, it stops there at the latest.
        let mut oldest_match = self.newest_stored + 1;
        let mut seen = 0u64;
        while hi >= 1 {
            let up = if phrase { oldest_match - hi - 1 } else { 0 };
            let left = deadline.saturating_duration_since(Instant::now()).as_secs_f64() * SAFETY;
            let plan = match cost {
                // A phrase read downwards goes on to the oldest message: the window may as well.
                None if phrase && up > hi => Some(Plan {
                    lo: 1,
                    ascending: false,
                    reads: hi,
                }),
                None => Some(Plan {
                    lo: (hi - width + 1).max(1),
                    ascending: phrase,
                    reads: up + width,
                }),
                Some(cost) if phrase && cost * hi as f64 <= left => Some(Plan {
                    lo: 1,
                    ascending: false,
                    reads: hi,
                }),
                Some(cost) => {
                    let affordable = (left / cost.max(1e-12)) as i64 - up;
                    width = (width * GROWTH).min(affordable);
                    (width >= MIN_WINDOW).then(|| Plan {
                        lo: (hi - width + 1).max(1),
                        ascending: phrase,
                        reads: up + width,
                    })
                }
            };
            let Some(plan) = plan else {
                return Ok(self.stopped_at(hi + 1));
            };
            let started = Instant::now();
            let mut rowids = conn.prepare_cached(if plan.ascending {
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3 ORDER BY rowid ASC"
        } else {
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ?1 AND rowid BETWEEN ?2 AND ?3 ORDER BY rowid DESC"
        })?;
            ids.clear();
            for id in rowids.query_map(params![fts, plan.lo, hi], |row| row.get::<_, i64>(0))? {
                ids.push(id?);
            }
            if plan.ascending {
                ids.reverse();
            }
            if let Some(&oldest) = ids.last() {
                oldest_match = oldest_match.min(oldest);
            }
            for &id in &ids {
                let mut rows = message.query(params![query.session, query.since, query.before, id])?;
                if let Some(row) = rows.next()? {
                    if !visit(row)? {
                        return Ok(Reached::Enough);
                    }
                }
                seen += 1;
                if self.out_of_time(seen, id) {
                    return Ok(self.stopped_at(id));
                }
            }
            cost = Some(started.elapsed().as_secs_f64() / plan.reads.max(1) as f64);
            hi = plan.lo - 1;
        }
        Ok(Reached::Everything)
    }
}

/// Whether FTS5 reads `fts` as holding a phrase: a quoted string of more than one word (any
/// character but a letter or digit may separate words). Only speed depends on it: a wrong yes
/// reads a window upwards that could have been read downwards, and the other way round.
fn has_phrase(fts: &str) -> bool {
    let mut quoted = false;
    // In the current string: a word seen, and something that is not a letter or digit after it.
    let (mut word, mut gap) = (false, false);
    let mut chars = fts.chars().peekable();
    while let Some(c) = chars.next() {
        // Inside a string, `""` is a quote character, which separates words.
        if c == '"' && !(quoted && chars.next_if_eq(&'"').is_some()) {
            quoted = !quoted;
            (word, gap) = (false, false);
        } else if quoted && c.is_alphanumeric() {
            if gap {
                return true;
            }
            word = true;
        } else if quoted && word {
            gap = true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::has_phrase;

    #[test]
    fn a_phrase_is_a_quoted_string_of_more_than_one_word() {
        for fts in [
            r#""error rollback""#,
            r#""coupon-code""#,
            r#"("x" OR "a""b")"#,
            r#""error timeout"*"#,
        ] {
            assert!(has_phrase(fts), "{fts}");
        }
        for fts in [
            r#""error" AND "rollback""#,
            r#"("coupon" OR "coupons")"#,
            r#""staging"*"#,
            r#""""x""""#,
        ] {
            assert!(!has_phrase(fts), "{fts}");
        }
    }
}
