//! The duplicate-key scan of the raw config text: `serde_json::Value` keeps the last of two
//! equal keys silently, so the scan runs on the text before it is parsed into a value.

use super::walker::join;
use std::fmt;

/// Key paths that occur twice in one object. `serde_json::Value` silently keeps the last,
/// which would drop, say, a whole first `steps` block. Comment keys may repeat.
pub(super) fn duplicate_keys(text: &str) -> Vec<String> {
    use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
    use std::cell::RefCell;
    use std::collections::HashSet;

    struct Dups<'a> {
        path: String,
        found: &'a RefCell<Vec<String>>,
    }
    impl<'de> DeserializeSeed<'de> for Dups<'_> {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> Visitor<'de> for Dups<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
            let mut i = 0;
            while seq
                .next_element_seed(Dups {
                    path: format!("{}[{i}]", self.path),
                    found: self.found,
                })?
                .is_some()
            {
                i += 1;
            }
            Ok(())
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut seen = HashSet::new();
            while let Some(key) = map.next_key::<String>()? {
                let path = join(&self.path, &key);
                if !key.starts_with('_') && !seen.insert(key) {
                    self.found.borrow_mut().push(path.clone());
                }
                map.next_value_seed(Dups {
                    path,
                    found: self.found,
                })?;
            }
            Ok(())
        }
    }

    let found = RefCell::new(Vec::new());
    let mut de = serde_json::Deserializer::from_str(text);
    // The text already parsed as a Value, so this walk cannot fail on syntax.
    let _ = Dups {
        path: String::new(),
        found: &found,
    }
    .deserialize(&mut de);
    found.into_inner()
}
