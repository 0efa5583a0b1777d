//! Protocol versions and the one rule that says whether two of them can talk.

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

/// The version this crate speaks.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion { major: 1, minor: 4 };

/// A protocol version, `MAJOR.MINOR` on the wire.
///
/// - A minor version adds methods, optional params or result fields; a side that does not know
///   them ignores them, and asks about methods through the server's `capabilities`.
/// - A major version changes or removes something: the two sides cannot talk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProtocolVersion {
    /// Incompatible changes.
    pub major: u32,
    /// Additions.
    pub minor: u32,
}

impl ProtocolVersion {
    /// Whether a server speaking `self` can serve a client speaking `client`.
    ///
    /// - Same major version, at 1 or above: compatible, whatever the minors (a method one side
    ///   lacks is absent from `capabilities`, and the other side asks before calling it).
    /// - Major 0 is unstable: only the same minor is compatible.
    /// - Different majors: never.
    pub fn is_compatible_with(self, client: ProtocolVersion) -> bool {
        match (self.major, client.major) {
            (0, 0) => self.minor == client.minor,
            (server, client) => server == client,
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// A version string that is not `MAJOR.MINOR`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a protocol version (expected MAJOR.MINOR, e.g. `1.0`)")]
pub struct BadVersion(pub String);

impl FromStr for ProtocolVersion {
    type Err = BadVersion;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || BadVersion(text.to_owned());
        let (major, minor) = text.split_once('.').ok_or_else(bad)?;
        let number = |part: &str| {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            part.parse::<u32>().map_err(|_| bad())
        };
        Ok(Self {
            major: number(major)?,
            minor: number(minor)?,
        })
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> ProtocolVersion {
        text.parse().unwrap()
    }

    #[test]
    fn the_compatibility_rule_holds_for_every_case_of_its_table() {
        // (server, client, compatible)
        let table = [
            ("1.0", "1.0", true),
            ("1.3", "1.0", true),
            ("1.0", "1.3", true),
            ("2.0", "1.9", false),
            ("1.9", "2.0", false),
            ("0.4", "0.4", true),
            ("0.4", "0.5", false),
            ("0.5", "0.4", false),
            ("1.0", "0.9", false),
            ("0.9", "1.0", false),
        ];
        for (server, client, expected) in table {
            assert_eq!(
                v(server).is_compatible_with(v(client)),
                expected,
                "server {server}, client {client}"
            );
        }
    }

    #[test]
    fn versions_read_and_write_as_major_dot_minor() {
        assert_eq!(v("12.3"), ProtocolVersion { major: 12, minor: 3 });
        assert_eq!(v("12.3").to_string(), "12.3");
        for bad in ["1", "1.", ".1", "1.0.0", "a.b", "-1.0", "1.+2", ""] {
            assert_eq!(
                bad.parse::<ProtocolVersion>(),
                Err(BadVersion(bad.into())),
                "{bad}"
            );
        }
        let json = serde_json::to_string(&PROTOCOL_VERSION).unwrap();
        assert_eq!(
            json,
            format!("\"{}.{}\"", PROTOCOL_VERSION.major, PROTOCOL_VERSION.minor)
        );
        assert_eq!(
            serde_json::from_str::<ProtocolVersion>(&json).unwrap(),
            PROTOCOL_VERSION
        );
    }
}
