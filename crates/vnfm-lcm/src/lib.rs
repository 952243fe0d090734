//! The lifecycle management core.
//!
//! - [`state`]: the operation-occurrence state machine of ETSI SOL003 (pure and table-driven).

pub mod state;
