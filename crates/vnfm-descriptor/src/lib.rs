//! The normalized descriptor model of the VNF Manager.
//!
//! Packages carry descriptors written in TOSCA (an ETSI SOL001 VNFD, or an ONAP/O-RAN
//! Application Service Descriptor). The `vnfm-tosca` crate reads them; this crate holds what
//! they mean, in a form the lifecycle core and the infrastructure drivers consume directly and
//! that serializes to JSON (its JSON Schema is `schemas/descriptor.schema.json`).
//!
//! ```
//! use vnfm_descriptor::{Descriptor, Vnfd};
//!
//! let json = r#"{"kind":"vnfd","descriptorId":"d1","descriptorVersion":"1.0","provider":"Acme",
//!   "productName":"Demo","softwareVersion":"1.0","toscaDefinitionsVersion":"tosca_simple_yaml_1_2",
//!   "vnfNodeType":"acme.VNF","entryDefinitions":"Definitions/top.yaml","flavours":[]}"#;
//! let d: Descriptor = serde_json::from_str(json).unwrap();
//! assert_eq!(d.id(), "d1");
//! ```
//!
//! The [`diag`] module holds the [`Diagnostic`] type every package-reading layer reports with.

pub mod asd;
pub mod diag;
mod project;
pub mod vnfd;

pub use asd::Asd;
pub use diag::{Diagnostic, Location, Severity};
pub use vnfd::*;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The descriptor a package carries: a VNFD or an ASD.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Descriptor {
    /// An ETSI SOL001 VNF descriptor.
    Vnfd(Box<Vnfd>),
    /// An Application Service Descriptor (ONAP 0.1 / O-RAN 2.0 naming).
    Asd(Box<Asd>),
}

impl Descriptor {
    /// The descriptor id: `descriptor_id` of a VNFD, `asdId` of an ASD. It is the `vnfdId` the
    /// lifecycle API refers to.
    pub fn id(&self) -> &str {
        match self {
            Descriptor::Vnfd(v) => &v.descriptor_id,
            Descriptor::Asd(a) => &a.asd_id,
        }
    }

    /// The VNFD, if this is one.
    pub fn as_vnfd(&self) -> Option<&Vnfd> {
        match self {
            Descriptor::Vnfd(v) => Some(v),
            Descriptor::Asd(_) => None,
        }
    }

    /// The ASD, if this is one.
    pub fn as_asd(&self) -> Option<&Asd> {
        match self {
            Descriptor::Asd(a) => Some(a),
            Descriptor::Vnfd(_) => None,
        }
    }
}
