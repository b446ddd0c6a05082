//! `config_object!`: one object of the config file declared once, from which both its
//! schema type (the `…File` struct `config schema` and docs/config.md are generated from) and
//! its typed form (the struct the runner reads) follow, with the reader that fills the
//! typed form from the file.
//!
//! ```text
//! config_object! {
//!     /// The object's description (schema).
//!     #[serde(rename_all = "camelCase", deny_unknown_fields)]
//!     pub struct BackoffFile => /// The typed form's description.
//!     #[derive(Debug, Clone, Copy)]
//!     pub struct Backoff {
//!         /// A key read by a rule: `file type => typed type = rule`.
//!         #[serde(default = "d::backoff_initial_seconds")]
//!         #[schemars(range(min = 1, max = 604_800))]
//!         pub initial_seconds: u32 => u32 = count,
//!         /// A key without `=>` is resolved by hand in `validate.rs` (cross-field rules).
//!         pub other: Option<String>,
//!     }
//! }
//! ```
//!
//! Each field keeps its doc comment, `#[serde(…)]` and `#[schemars(…)]` attributes (in that
//! order) on the schema type; a field with a rule also becomes a field of the typed struct
//! with the same name and doc, filled by `rule(walker, object, key)`, where `key` is the
//! field's name in the file (its serde name, taken from the schema). The generated
//! `Typed::read(walker, object)` reads every such key of an object, in declaration order, and
//! `Typed::member(walker, parent, key)` the object at `key` of its parent, so that a section
//! is itself a rule of its parent.

macro_rules! config_object {
    (
        $(#[doc = $doc:literal])*
        #[serde($($serde:tt)*)]
        $(#[schemars($($schemars:tt)*)])*
        pub struct $file:ident =>
        $(#[doc = $tdoc:literal])*
        #[derive($($derive:path),*)]
        $(#[$tmeta:meta])*
        pub struct $typed:ident { $($body:tt)* }
    ) => {
        config_object!(@file [$(#[doc = $doc])* #[serde($($serde)*)] $(#[schemars($($schemars)*)])*]
            $file { $($body)* });
        config_object!(@typed [$(#[doc = $tdoc])* #[derive($($derive),*)] $(#[$tmeta])*] $typed
            [] [] $($body)*);
    };

    // The schema type: every field, as declared.
    (@file [$($attr:tt)*] $file:ident {
        $(
            $(#[doc = $fdoc:literal])*
            $(#[serde($($fserde:tt)*)])*
            $(#[schemars($($fschemars:tt)*)])*
            pub $field:ident: $ty:ty $(=> $typed_ty:ty = $rule:expr)?,
        )*
    }) => {
        #[derive(Serialize, JsonSchema)]
        $($attr)*
        pub struct $file {
            $(
                $(#[doc = $fdoc])*
                $(#[serde($($fserde)*)])*
                $(#[schemars($($fschemars)*)])*
                pub $field: $ty,
            )*
        }
    };

    // The typed struct, one field at a time: `all` collects every field (their order gives
    // each its key), `read` the fields with a rule.
    (@typed [$($tattr:tt)*] $typed:ident [$($all:ident)*] [$($read:tt)*]
        $(#[doc = $fdoc:literal])*
        $(#[serde($($fserde:tt)*)])*
        $(#[schemars($($fschemars:tt)*)])*
        pub $field:ident: $ty:ty => $typed_ty:ty = $rule:expr,
        $($rest:tt)*
    ) => {
        config_object!(@typed [$($tattr)*] $typed [$($all)* $field]
            [$($read)* { $(#[doc = $fdoc])* } $field: $typed_ty = $rule;] $($rest)*);
    };
    (@typed [$($tattr:tt)*] $typed:ident [$($all:ident)*] [$($read:tt)*]
        $(#[doc = $fdoc:literal])*
        $(#[serde($($fserde:tt)*)])*
        $(#[schemars($($fschemars:tt)*)])*
        pub $field:ident: $ty:ty,
        $($rest:tt)*
    ) => {
        config_object!(@typed [$($tattr)*] $typed [$($all)* $field] [$($read)*] $($rest)*);
    };
    (@typed [$($tattr:tt)*] $typed:ident [$($all:ident)*]
        [$( { $(#[doc = $fdoc:literal])* } $field:ident: $typed_ty:ty = $rule:expr; )*]
    ) => {
        $($tattr)*
        pub struct $typed {
            $(
                $(#[doc = $fdoc])*
                pub $field: $typed_ty,
            )*
        }

        impl $typed {
            /// Reads every key of `o` that has a rule, in declaration order.
            pub(in crate::config) fn read(w: &mut Walker, o: &Obj) -> Self {
                // The schema lists an object's keys in declaration order, so a field's
                // position is its key's.
                #[allow(non_camel_case_types, dead_code)]
                enum Key { $($all),* }
                let keys = o.shape.keys();
                debug_assert_eq!(
                    keys.len(),
                    [$(stringify!($all)),*].len(),
                    "{}: the schema's keys and the declaration's fields differ",
                    stringify!($typed)
                );
                let key = |k: Key| keys.get(k as usize).copied().unwrap_or_default();
                $typed {
                    $( $field: $rule(w, o, key(Key::$field)), )*
                }
            }

            /// Reads the object at `key` of `parent` (absent: every default).
            #[allow(dead_code)]
            pub(in crate::config) fn member(w: &mut Walker, parent: &Obj, key: &str) -> Self {
                let o = w.member(parent, key);
                Self::read(w, &o)
            }
        }
    };
}
