//! The lifecycle management core.
//!
//! - [`state`]: the operation-occurrence state machine of ETSI SOL003 (pure and table-driven).
//! - [`validate`]: request checks against the VNFD and the instance, before an occurrence
//!   exists.
//! - [`plan`]: the planner (pure): an operation request becomes an ordered list of hook,
//!   infrastructure and bookkeeping steps; rollback plans and retry points come from it.
//! - [`error`]: [`LcmError`], with the HTTP status each refusal maps to.

pub mod error;
pub mod plan;
pub mod state;
pub mod validate;

pub use error::LcmError;
pub use plan::{
    HookStep, OperationRequest, Plan, PlanKind, RollbackHooks, Step, plan, remaining, rollback_plan,
};
pub use validate::validate;
