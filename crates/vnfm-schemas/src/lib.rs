//! JSON Schemas (draft 2020-12) for the SOL003 v3.3.1 request bodies and the normalized
//! descriptor model, and validation that reports where and what is wrong.
//!
//! The schemas are the committed files in the workspace's `schemas/` directory, embedded at
//! compile time. They are generated from the Rust model (`vnfm-types` and
//! `vnfm_descriptor::Descriptor`) by this crate's `tests/generate.rs`, which fails when the
//! files drift from the model; this crate itself does not depend on the model, so it stays a
//! small validation library. Every schema is compiled once, on first use.
//!
//! ```
//! use serde_json::json;
//! use vnfm_schemas::{SchemaId, validate};
//!
//! let body = json!({"type": "SCALE_OUT", "aspectId": "VDU1_scale", "numberOfSteps": 0});
//! let violations = validate(SchemaId::ScaleVnfRequest, &body).unwrap_err();
//! assert_eq!(violations[0].pointer, "/numberOfSteps");
//! assert_eq!(violations[0].message, r#""numberOfSteps": 0 is less than the minimum of 1"#);
//! ```

use std::fmt;
use std::sync::OnceLock;

use jsonschema::error::ValidationErrorKind;
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// Longest rendering of an instance value inside a message; longer values are cut, so a
/// misplaced secret is never echoed in full.
const MAX_VALUE_CHARS: usize = 80;

/// What can go wrong with an embedded schema itself (not with a validated instance).
#[derive(Debug, Clone, thiserror::Error)]
pub enum SchemaError {
    /// The embedded file is not JSON.
    #[error("embedded schema {file} is not valid JSON: {message}")]
    NotJson {
        /// The schema file.
        file: &'static str,
        /// The parser's message.
        message: String,
    },
    /// The embedded file is JSON but not a usable JSON Schema.
    #[error("embedded schema {file} does not compile: {message}")]
    DoesNotCompile {
        /// The schema file.
        file: &'static str,
        /// The compiler's message.
        message: String,
    },
}

macro_rules! schema_ids {
    ($($(#[$doc:meta])* $variant:ident => $file:literal,)+) => {
        /// One schema file of `schemas/`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum SchemaId {
            $($(#[$doc])* $variant,)+
        }

        impl SchemaId {
            const ALL: &'static [SchemaId] = &[$(SchemaId::$variant,)+];

            /// Every schema, in file order.
            pub fn all() -> &'static [SchemaId] {
                Self::ALL
            }

            /// The file name in `schemas/`.
            pub fn file_name(self) -> &'static str {
                match self {
                    $(SchemaId::$variant => $file,)+
                }
            }

            /// The embedded file content.
            fn text(self) -> &'static str {
                match self {
                    $(SchemaId::$variant => include_str!(concat!("../../../schemas/", $file)),)+
                }
            }

            fn index(self) -> usize {
                Self::ALL.iter().position(|id| *id == self).unwrap_or(0)
            }
        }
    };
}

schema_ids! {
    /// `InstantiateVnfRequest` (SOL003 v3.3.1).
    InstantiateVnfRequest => "InstantiateVnfRequest.schema.json",
    /// `TerminateVnfRequest`.
    TerminateVnfRequest => "TerminateVnfRequest.schema.json",
    /// `HealVnfRequest` (with the SOL002 `vnfcInstanceId` and `healScript`).
    HealVnfRequest => "HealVnfRequest.schema.json",
    /// `ScaleVnfRequest`.
    ScaleVnfRequest => "ScaleVnfRequest.schema.json",
    /// `ScaleVnfToLevelRequest`.
    ScaleVnfToLevelRequest => "ScaleVnfToLevelRequest.schema.json",
    /// `ChangeVnfFlavourRequest`.
    ChangeVnfFlavourRequest => "ChangeVnfFlavourRequest.schema.json",
    /// `OperateVnfRequest`.
    OperateVnfRequest => "OperateVnfRequest.schema.json",
    /// `ChangeExtVnfConnectivityRequest`.
    ChangeExtVnfConnectivityRequest => "ChangeExtVnfConnectivityRequest.schema.json",
    /// `VnfInfoModificationRequest` (the PATCH body).
    VnfInfoModificationRequest => "VnfInfoModificationRequest.schema.json",
    /// `ChangeCurrentVnfPkgRequest`.
    ChangeCurrentVnfPkgRequest => "ChangeCurrentVnfPkgRequest.schema.json",
    /// `LccnSubscriptionRequest`.
    LccnSubscriptionRequest => "LccnSubscriptionRequest.schema.json",
    /// `CreateVnfRequest`.
    CreateVnfRequest => "CreateVnfRequest.schema.json",
    /// `CancelMode`.
    CancelMode => "CancelMode.schema.json",
    /// The normalized descriptor model (`vnfm_descriptor::Descriptor`).
    Descriptor => "descriptor.schema.json",
}

impl fmt::Display for SchemaId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.file_name())
    }
}

/// One way an instance fails its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer into the instance, e.g. `/extVirtualLinks/0/resourceId`. For a missing
    /// or unexpected member it points at that member.
    pub pointer: String,
    /// What is wrong, in plain words; instance values are cut to about 80 characters.
    pub message: String,
    /// JSON pointer of the failing keyword in the schema.
    pub schema_path: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.pointer, self.message)
        }
    }
}

type Slot<T> = OnceLock<Result<T, SchemaError>>;

fn parsed(id: SchemaId) -> &'static Result<Value, SchemaError> {
    static SLOTS: [Slot<Value>; SchemaId::ALL.len()] =
        [const { OnceLock::new() }; SchemaId::ALL.len()];
    SLOTS[id.index()].get_or_init(|| {
        serde_json::from_str(id.text()).map_err(|e| SchemaError::NotJson {
            file: id.file_name(),
            message: e.to_string(),
        })
    })
}

/// The compiled validator of `id`, compiled on first use.
pub fn validator(id: SchemaId) -> Result<&'static Validator, SchemaError> {
    static SLOTS: [Slot<Validator>; SchemaId::ALL.len()] =
        [const { OnceLock::new() }; SchemaId::ALL.len()];
    let compiled = SLOTS[id.index()].get_or_init(|| {
        let schema = parsed(id).as_ref().map_err(Clone::clone)?;
        jsonschema::draft202012::new(schema).map_err(|e| SchemaError::DoesNotCompile {
            file: id.file_name(),
            message: e.to_string(),
        })
    });
    compiled.as_ref().map_err(Clone::clone)
}

/// The schema document of `id`.
///
/// # Panics
///
/// If the embedded file is not JSON. The files are generated and this crate's tests parse
/// every one, so this does not happen in a tested build; [`try_schema`] returns the error
/// instead.
pub fn schema(id: SchemaId) -> &'static Value {
    match try_schema(id) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    }
}

/// The schema document of `id`, or why the embedded file cannot be read.
pub fn try_schema(id: SchemaId) -> Result<&'static Value, SchemaError> {
    parsed(id).as_ref().map_err(Clone::clone)
}

/// Validates `instance` against schema `id`. On failure, every violation found, each with
/// the JSON pointer of the offending value.
pub fn validate(id: SchemaId, instance: &Value) -> Result<(), Vec<Violation>> {
    let validator = validator(id).map_err(|e| {
        vec![Violation {
            pointer: String::new(),
            message: e.to_string(),
            schema_path: String::new(),
        }]
    })?;
    let mut out = Vec::new();
    for error in validator.iter_errors(instance) {
        collect(&error, instance, &mut out);
    }
    if out.is_empty() { Ok(()) } else { Err(out) }
}

/// Turns one validator error into violations. `anyOf`/`oneOf` failures are unwrapped into the
/// errors of the alternative the instance came closest to, so that the pointer names the
/// actual problem rather than the enclosing value.
fn collect(error: &ValidationError<'_>, root: &Value, out: &mut Vec<Violation>) {
    let at = error.instance_path().as_str();
    match error.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            // Alternatives that fail only because the value has another JSON type altogether
            // (e.g. the `null` branch of an optional attribute), or whose tag constant does
            // not match (the other variants of a tagged union), are not what the client meant.
            let meant: Vec<&Vec<ValidationError<'static>>> = context
                .iter()
                .filter(|branch| {
                    let other_type = branch.iter().all(|e| {
                        matches!(e.kind(), ValidationErrorKind::Type { .. })
                            && e.instance_path().as_str() == at
                    });
                    let other_tag = branch
                        .iter()
                        .any(|e| matches!(e.kind(), ValidationErrorKind::Constant { .. }));
                    !other_type && !other_tag
                })
                .collect();
            if let [branch] = meant.as_slice() {
                for e in branch.iter() {
                    collect(e, root, out);
                }
                return;
            }
            if meant.is_empty() {
                let kinds: Vec<String> = context
                    .iter()
                    .flatten()
                    .filter_map(|e| match e.kind() {
                        ValidationErrorKind::Type { kind } => Some(type_names(kind)),
                        _ => None,
                    })
                    .collect();
                out.push(Violation {
                    pointer: at.to_owned(),
                    message: format!(
                        "{} is not of type {}",
                        placeholder(at, error.instance(), root),
                        kinds.join(" or ")
                    ),
                    schema_path: error.schema_path().as_str().to_owned(),
                });
                return;
            }
            // Several plausible alternatives: say what each one would need.
            let needs: Vec<String> = meant
                .iter()
                .filter_map(|branch| branch.first())
                .map(|e| {
                    let mut sub = Vec::new();
                    collect(e, root, &mut sub);
                    sub.into_iter()
                        .map(|v| v.message)
                        .collect::<Vec<_>>()
                        .join(", ")
                })
                .collect();
            out.push(Violation {
                pointer: at.to_owned(),
                message: format!(
                    "{} matches none of the allowed alternatives: {}",
                    placeholder(at, error.instance(), root),
                    needs.join("; or ")
                ),
                schema_path: error.schema_path().as_str().to_owned(),
            });
            return;
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            out.push(Violation {
                pointer: at.to_owned(),
                message: format!(
                    "{} matches more than one of the alternatives, which exclude each other",
                    placeholder(at, error.instance(), root)
                ),
                schema_path: error.schema_path().as_str().to_owned(),
            });
            return;
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            out.push(Violation {
                pointer: format!("{at}/{}", escape(name)),
                message: format!("{} is a required property", render(property)),
                schema_path: error.schema_path().as_str().to_owned(),
            });
            return;
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            for name in unexpected {
                out.push(Violation {
                    pointer: format!("{at}/{}", escape(name)),
                    message: format!(
                        "{} is not an allowed property here",
                        render(&Value::from(name.as_str()))
                    ),
                    schema_path: error.schema_path().as_str().to_owned(),
                });
            }
            return;
        }
        _ => {}
    }
    let value = placeholder(at, error.instance(), root);
    out.push(Violation {
        pointer: at.to_owned(),
        message: error.masked_with(value).to_string(),
        schema_path: error.schema_path().as_str().to_owned(),
    });
}

fn type_names(kind: &jsonschema::error::TypeKind) -> String {
    match kind {
        jsonschema::error::TypeKind::Single(t) => format!("{t:?}").to_lowercase(),
        jsonschema::error::TypeKind::Multiple(set) => set
            .iter()
            .map(|t| format!("{t:?}").to_lowercase())
            .collect::<Vec<_>>()
            .join(" or "),
    }
}

/// How the offending value is shown in a message: `"name": value` when it is an object
/// member, else just the value; cut to [`MAX_VALUE_CHARS`].
fn placeholder(pointer: &str, value: &Value, root: &Value) -> String {
    let shown = render(value);
    let Some((parent, last)) = pointer.rsplit_once('/') else {
        return shown;
    };
    match root.pointer(parent) {
        Some(Value::Object(_)) => format!("{}: {shown}", render(&Value::from(unescape(last)))),
        _ => shown,
    }
}

/// Compact JSON of `value`, cut to [`MAX_VALUE_CHARS`] characters.
fn render(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(MAX_VALUE_CHARS) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_schema_parses_and_compiles() {
        for id in SchemaId::all() {
            assert!(try_schema(*id).is_ok(), "{id}");
            assert!(validator(*id).is_ok(), "{id}");
            assert_eq!(
                schema(*id)["$schema"],
                "https://json-schema.org/draft/2020-12/schema",
                "{id}"
            );
        }
        assert_eq!(SchemaId::all().len(), 14);
    }

    #[test]
    fn long_values_are_cut_in_messages() {
        let secret = "s".repeat(500);
        let shown = render(&Value::from(secret));
        assert_eq!(shown.chars().count(), MAX_VALUE_CHARS + 1);
        assert!(shown.ends_with('…'));
    }

    #[test]
    fn pointer_segments_are_escaped_both_ways() {
        assert_eq!(escape("a/b~c"), "a~1b~0c");
        assert_eq!(unescape("a~1b~0c"), "a/b~c");
    }
}
