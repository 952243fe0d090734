//! # vnfm: an ETSI NFV SOL-compliant VNF Manager library
//!
//! This is the crate orchestrators embed. It re-exports the layers of the VNF Manager:
//!
//! - [`csar`]: SOL004 package reading (TOSCA.meta, manifest, digests, signatures, archive safety);
//! - [`tosca`]: the TOSCA/SOL001 (and ASD) parser;
//! - [`descriptor`]: the normalized descriptor model the rest of the system consumes;
//! - [`schemas`]: JSON Schemas for SOL003 request bodies and the descriptor model.
//! - [`package`]: all of the above in one call: open, verify and read a package.
//! - [`lcm`]: the lifecycle manager to embed: SOL003 VNF LCM operations executed in the
//!   background on a durable store, with crash recovery.

pub use vnfm_csar as csar;
pub use vnfm_descriptor as descriptor;
pub use vnfm_schemas as schemas;
pub use vnfm_tosca as tosca;
/// Spans and `traceparent` headers on the VNFM's outgoing edges: call [`trace::enable`] after
/// installing an OpenTelemetry `tracing` layer and the W3C propagator.
pub use vnfm_trace as trace;

pub mod lcm;
pub mod package;
