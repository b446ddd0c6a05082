//! The walker's reading of one value: each reader checks a key against its declaration
//! (type, range, choices), records what is wrong with the key path, and returns the value or
//! nothing, so that validation goes on and reports every problem at once.

use super::*;

pub(super) mod rules;

#[derive(Default)]
pub(in crate::config) struct Walker {
    pub(in crate::config) errors: Vec<KeyError>,
}

/// An object being read: its key path and, if it really was an object, its members.
pub(in crate::config) struct Obj<'v> {
    pub(in crate::config) path: String,
    pub(in crate::config) map: Option<&'v Map<String, Value>>,
    /// What the definition says this object holds.
    pub(in crate::config) shape: Shape,
}

impl<'v> Obj<'v> {
    pub(in crate::config) fn get(&self, key: &str) -> Option<&'v Value> {
        self.map?.get(key)
    }
    pub(in crate::config) fn path(&self, key: &str) -> String {
        join(&self.path, key)
    }
    /// The declared default of `key` (see `definition.rs`).
    pub(in crate::config) fn default<T: serde::de::DeserializeOwned>(&self, key: &str) -> T {
        match self.shape.default(key) {
            Some(declared) => declared,
            // A rule asked for the default of a key declared without one: a slip in
            // definition.rs that every load of a config (and so the first config test)
            // hits, never the user's fault.
            None => panic!(
                "config key {} is read with its default but declares none in definition.rs",
                self.path(key)
            ),
        }
    }
}

pub(in crate::config) fn join(path: &str, key: &str) -> String {
    let key = printable(key);
    if path.is_empty() {
        key
    } else {
        format!("{path}.{key}")
    }
}

pub(in crate::config) fn step_keys() -> Vec<&'static str> {
    Step::ALL.iter().map(|s| s.key()).collect()
}

/// The keys of `steps`: the lifecycle steps, then the review round's agent.
#[cfg(test)]
pub(in crate::config) fn steps_keys() -> Vec<&'static str> {
    let mut keys = step_keys();
    keys.push(crate::config::ADDRESS_REVIEW);
    keys
}

/// Errors a reader recorded, held back so that each is listed where its key's errors belong
/// (see [`Walker::held`]).
pub(in crate::config) struct Held {
    /// The path of the object whose members were read.
    object: String,
    errors: Vec<KeyError>,
}

impl Held {
    /// Lists the held errors of the members `keys`, key by key in that order (a key's own
    /// errors in the order found).
    pub(in crate::config) fn release(&mut self, w: &mut Walker, keys: &[&str]) {
        for key in keys {
            let held = std::mem::take(&mut self.errors);
            let (mine, rest): (Vec<KeyError>, Vec<KeyError>) = held
                .into_iter()
                .partition(|e| member_of(&self.object, &e.path) == *key);
            w.errors.extend(mine);
            self.errors = rest;
        }
    }

    /// Lists every error still held (of keys no `release` named), in the order found.
    pub(in crate::config) fn release_rest(self, w: &mut Walker) {
        w.errors.extend(self.errors);
    }
}

/// The member of the object at `object` that the key path `path` lies in.
fn member_of<'p>(object: &str, path: &'p str) -> &'p str {
    let inside = if object.is_empty() {
        path
    } else {
        path.strip_prefix(object)
            .and_then(|p| p.strip_prefix('.'))
            .unwrap_or(path)
    };
    inside.split(['.', '[']).next().unwrap_or(inside)
}

impl Walker {
    /// Runs `read` on the members of `o`, holding back the errors it records: the caller
    /// lists them with [`Held::release`] where each key's errors belong, so that a reader
    /// derived from the declaration (which reads its keys in declaration order) keeps the
    /// order in which `config check` lists errors.
    pub(in crate::config) fn held<T>(
        &mut self,
        o: &Obj,
        read: impl FnOnce(&mut Walker) -> T,
    ) -> (T, Held) {
        let mark = self.errors.len();
        let value = read(self);
        let errors = self.errors.split_off(mark);
        (
            value,
            Held {
                object: o.path.clone(),
                errors,
            },
        )
    }

    pub(in crate::config) fn err(&mut self, path: String, message: impl Into<String>) {
        self.errors.push(KeyError {
            path,
            message: message.into(),
        });
    }

    pub(in crate::config) fn expected(&mut self, path: String, what: &str, found: &Value) {
        // The old runner accepted numeric strings for some keys: say how to fix such a value.
        let hint = match found {
            Value::String(s)
                if ["an integer", "a number", "0 (off)"]
                    .iter()
                    .any(|p| what.starts_with(p)) =>
            {
                s.trim()
                    .parse::<f64>()
                    .ok()
                    .map(|_| format!(" (write {} without quotes)", s.trim()))
                    .unwrap_or_default()
            }
            _ => String::new(),
        };
        self.err(
            path,
            format!("expected {what}, found {}{hint}", describe(found)),
        );
    }

    /// The object at `key` of `o`, whose keys must be the declared ones (or start with `_`).
    pub(in crate::config) fn member<'v>(&mut self, o: &Obj<'v>, key: &str) -> Obj<'v> {
        self.object(o.path(key), o.get(key), o.shape.child(key))
    }

    /// Reads `v` as an object whose keys must be those of `shape` (or start with `_`).
    pub(in crate::config) fn object<'v>(
        &mut self,
        path: String,
        v: Option<&'v Value>,
        shape: Shape,
    ) -> Obj<'v> {
        self.object_of(path, v, shape, "key")
    }

    /// Like `object`; `noun` names what the keys are ("key", or "step" under `steps`).
    pub(in crate::config) fn object_of<'v>(
        &mut self,
        path: String,
        v: Option<&'v Value>,
        shape: Shape,
        noun: &str,
    ) -> Obj<'v> {
        let known = shape.keys();
        let known = known.as_slice();
        let map = match v {
            None => None,
            Some(Value::Object(map)) => {
                for key in map.keys() {
                    if !key.starts_with('_') && !known.contains(&key.as_str()) {
                        let message = unknown_message(key, known, noun);
                        self.err(join(&path, key), message);
                    }
                }
                Some(map)
            }
            Some(other) => {
                self.expected(path.clone(), "an object", other);
                None
            }
        };
        Obj { path, map, shape }
    }

    /// An integer in the declared range.
    pub(in crate::config) fn uint(&mut self, o: &Obj, key: &str) -> Option<u32> {
        let v = o.get(key)?;
        let (min, max) = o.shape.range(key);
        let (min, max) = (min.unwrap_or(0.0), max.unwrap_or(f64::from(u32::MAX)));
        match v
            .as_f64()
            .filter(|n| n.is_finite() && n.fract() == 0.0 && *n >= min)
        {
            Some(n) if n > max => {
                self.above_maximum(o.path(key), n, max);
                None
            }
            Some(n) => Some(n as u32),
            None => {
                self.expected(o.path(key), &format!("an integer ≥ {}", number(min)), v);
                None
            }
        }
    }

    /// `positive`, or the declared default when the key is absent or wrong.
    pub(in crate::config) fn positive_or_default(&mut self, o: &Obj, key: &str) -> f64 {
        self.positive(o, key).unwrap_or_else(|| o.default(key))
    }

    /// A finite number > 0, at most the declared maximum.
    pub(in crate::config) fn positive(&mut self, o: &Obj, key: &str) -> Option<f64> {
        let v = o.get(key)?;
        let max = o.shape.range(key).1.unwrap_or(f64::MAX);
        match v.as_f64().filter(|n| n.is_finite() && *n > 0.0) {
            Some(n) if n > max => {
                self.above_maximum(o.path(key), n, max);
                None
            }
            Some(n) => Some(n),
            None => {
                self.expected(o.path(key), "a number > 0", v);
                None
            }
        }
    }

    pub(in crate::config) fn above_maximum(&mut self, path: String, n: f64, max: f64) {
        self.err(
            path,
            format!("{} is above the maximum {}", number(n), number(max)),
        );
    }

    pub(in crate::config) fn boolean(&mut self, o: &Obj, key: &str) -> Option<bool> {
        let v = o.get(key)?;
        match v {
            Value::Bool(b) => Some(*b),
            other => {
                self.expected(o.path(key), "true or false", other);
                None
            }
        }
    }

    /// A string with something in it besides whitespace.
    pub(in crate::config) fn text(&mut self, o: &Obj, key: &str) -> Option<String> {
        let v = o.get(key)?;
        self.text_value(o.path(key), v)
    }

    pub(in crate::config) fn text_value(&mut self, path: String, v: &Value) -> Option<String> {
        match v {
            Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
            other => {
                self.expected(path, "a non-empty string", other);
                None
            }
        }
    }

    /// One of the declared names of `key`.
    pub(in crate::config) fn choice(&mut self, o: &Obj, key: &str) -> Option<&'static str> {
        let v = o.get(key)?;
        let allowed = o.shape.choices(key);
        let list = allowed.join("|");
        match v {
            Value::String(s) => match allowed.iter().find(|a| *a == s) {
                Some(name) => Some(name),
                None => {
                    self.err(
                        o.path(key),
                        format!("{} is not one of {list}", describe_str(s)),
                    );
                    None
                }
            },
            other => {
                self.expected(o.path(key), &format!("one of {list}"), other);
                None
            }
        }
    }

    /// One of the declared names of `key`, as its type.
    pub(in crate::config) fn pick<T: serde::de::DeserializeOwned>(
        &mut self,
        o: &Obj,
        key: &str,
    ) -> Option<T> {
        let name = self.choice(o, key)?;
        serde_json::from_value(Value::String(name.into())).ok()
    }

    /// An array of strings. `blank` is the complaint about a blank item, if blanks are wrong.
    pub(in crate::config) fn strings(
        &mut self,
        o: &Obj,
        key: &str,
        non_empty: bool,
        blank: Option<&str>,
    ) -> Option<Vec<String>> {
        let v = o.get(key)?;
        let path = o.path(key);
        let Value::Array(items) = v else {
            self.expected(path, "an array of strings", v);
            return None;
        };
        if non_empty && items.is_empty() {
            self.err(
                path,
                "expected a non-empty array of strings, found an empty array",
            );
            return None;
        }
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match item {
                Value::String(s) => match blank.filter(|_| s.trim().is_empty()) {
                    Some(complaint) => {
                        self.err(format!("{path}[{i}]"), complaint);
                        ok = false;
                    }
                    None => out.push(s.clone()),
                },
                other => {
                    self.expected(format!("{path}[{i}]"), "a string", other);
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    /// A path; relative paths resolve against the config file's directory. `""` = unset,
    /// as in the old runner's `logDir`.
    pub(in crate::config) fn path(&mut self, o: &Obj, key: &str, base: &Path) -> Option<PathBuf> {
        let v = o.get(key)?;
        match v {
            Value::String(s) if s.is_empty() => None,
            Value::String(s) => Some(absolute(&base.join(s))),
            other => {
                self.expected(o.path(key), "a path (string)", other);
                None
            }
        }
    }
}
