//! `Commit`: a git commit id the machine carries from the look at CI to the merge, so that
//! what is merged is exactly what CI passed. Small and `Copy`, like every event.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A git commit id: SHA-1 (40 hex digits) or SHA-256 (64), held as bytes. Written and read as
/// its lowercase hex text.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Commit {
    len: u8,
    bytes: [u8; 32],
}

impl Commit {
    /// The commit whose id `hex` spells (40 or 64 hex digits, either case); `None` otherwise.
    pub fn parse(hex: &str) -> Option<Commit> {
        let hex = hex.trim().as_bytes();
        if hex.len() != 40 && hex.len() != 64 {
            return None;
        }
        let mut bytes = [0u8; 32];
        for (i, pair) in hex.chunks(2).enumerate() {
            let digit = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
            bytes[i] = digit(pair[0])? << 4 | digit(pair[1])?;
        }
        Some(Commit {
            len: (hex.len() / 2) as u8,
            bytes,
        })
    }

    /// The id as git writes it (lowercase hex).
    pub fn hex(&self) -> String {
        self.bytes[..usize::from(self.len)]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The first 12 hex digits: enough to name a commit to a person.
    pub fn short(&self) -> String {
        let mut hex = self.hex();
        hex.truncate(12);
        hex
    }
}

impl std::fmt::Display for Commit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.hex())
    }
}

impl std::fmt::Debug for Commit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Commit({})", self.short())
    }
}

impl Serialize for Commit {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for Commit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Commit, D::Error> {
        let text = String::deserialize(d)?;
        Commit::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("`{text}` is not a commit id (40 or 64 hex digits)"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha1_and_sha256_ids_round_trip_as_lowercase_hex() {
        let sha1 = "0123456789ABCDEF0123456789abcdef01234567";
        let c = Commit::parse(sha1).expect("sha-1");
        assert_eq!(c.hex(), sha1.to_ascii_lowercase());
        assert_eq!(c.short(), "0123456789ab");
        let sha256 = "ab".repeat(32);
        assert_eq!(Commit::parse(&sha256).expect("sha-256").hex(), sha256);
        for bad in ["", "abc", &"g".repeat(40), &"a".repeat(41)] {
            assert_eq!(Commit::parse(bad), None, "{bad}");
        }
        assert_ne!(
            Commit::parse(&"ab".repeat(20)),
            Commit::parse(&"ab".repeat(32))
        );
    }

    #[test]
    fn a_commit_is_written_as_its_hex_text() {
        let c = Commit::parse(&"1f".repeat(20)).expect("commit");
        let json = serde_json::to_string(&c).expect("json");
        assert_eq!(json, format!("\"{}\"", "1f".repeat(20)));
        let back: Commit = serde_json::from_str(&json).expect("parse");
        assert_eq!(back, c);
        assert!(serde_json::from_str::<Commit>("\"nope\"").is_err());
    }
}
