//! The one error type of the store.

use std::fmt;

use vnfm_types::{LcmOperationStateType, VnfLcmOpOccId};

use crate::model::Version;

/// What can go wrong in a store operation.
///
/// Messages never contain secrets: bound values (documents, blobs) are not echoed, and
/// database URLs are shown without their password.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The record does not exist.
    #[error("{kind} {id} not found")]
    NotFound {
        /// Kind of record (`VNF instance`, `op-occ`, `subscription`, `VIM`, `outbox row`).
        kind: &'static str,
        /// Its identifier.
        id: String,
    },
    /// The change contradicts the current state of other records (see [`Conflict`]).
    #[error("conflict: {0}")]
    Conflict(Conflict),
    /// Optimistic concurrency: the record changed since the caller read it.
    #[error("{kind} {id} was modified concurrently: expected version {expected}, found {found}")]
    VersionMismatch {
        /// Kind of record.
        kind: &'static str,
        /// Its identifier.
        id: String,
        /// The version the caller expected.
        expected: Version,
        /// The version in the store.
        found: Version,
    },
    /// The database failed (a statement or constraint the store did not anticipate).
    #[error("database error: {0}")]
    Backend(String),
    /// The database cannot be reached now (it is restarting, a standby is being promoted, the
    /// network is cut, or no connection was free in time): nothing was written, and the same
    /// call may succeed later. Servers answer it 503.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// A stored record does not decode.
    #[error("corrupt {kind} record {id}: {reason}")]
    Corrupt {
        /// Kind of record.
        kind: &'static str,
        /// Its identifier.
        id: String,
        /// Why it does not decode.
        reason: String,
    },
    /// Package content could not be read from the caller's reader, or written to the
    /// caller's writer ([`crate::PackageStore::put_package_content_from`],
    /// [`crate::PackageStore::copy_package_content_to`]).
    #[error("copying the content of VNF package {id} failed: {source}")]
    ContentIo {
        /// The package.
        id: String,
        /// The I/O error of the reader or writer.
        #[source]
        source: std::io::Error,
    },
    /// The caller passed a value the store cannot accept.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The database was migrated by a newer build of the store.
    #[error(
        "database schema version {found} is newer than this build supports (up to {supported}); \
         upgrade the VNFM or point it at another database"
    )]
    SchemaTooNew {
        /// The newest migration recorded in the database.
        found: i64,
        /// The newest migration this build knows.
        supported: i64,
    },
    /// Applying the schema migrations failed.
    #[error("schema migration failed: {0}")]
    Migration(String),
    /// The store URL is not one of the accepted forms.
    #[error(
        "unsupported store URL {0:?}: expected sqlite:///abs/path.db (optionally with ?synchronous=full|normal, writer_cache_kib=N, reader_cache_kib=N; N from 256 to 4194304), sqlite::memory: or postgres://..."
    )]
    UnsupportedUrl(String),
}

/// Why a change was refused because of other records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    /// An operation occurrence in a non-final state holds the VNF instance.
    InstanceBusy {
        /// The instance.
        instance_id: String,
        /// The op-occ holding it.
        op_occ_id: VnfLcmOpOccId,
        /// Its state.
        state: LcmOperationStateType,
    },
    /// The caller no longer holds the lease of the op-occ (another runner took it over, or it
    /// reached a state without a lease).
    LeaseLost {
        /// The op-occ.
        op_occ_id: VnfLcmOpOccId,
        /// The caller.
        owner: String,
        /// Who holds the lease now, if anybody.
        holder: Option<String>,
    },
    /// Another owner holds a live lease on the op-occ.
    LeaseHeld {
        /// The op-occ.
        op_occ_id: VnfLcmOpOccId,
        /// The current holder.
        holder: String,
    },
    /// The op-occ is in a final state: nothing may change it any more.
    Finished {
        /// The op-occ.
        op_occ_id: VnfLcmOpOccId,
        /// Its final state.
        state: LcmOperationStateType,
    },
    /// A record with this identifier exists already.
    AlreadyExists {
        /// Kind of record.
        kind: &'static str,
        /// Its identifier.
        id: String,
    },
    /// The idempotency key a creating write carried ([`crate::PendingKey`]) was committed by
    /// another request meanwhile: nothing of this write was kept.
    KeyTaken {
        /// The key.
        key: String,
    },
    /// The record is still referenced.
    InUse {
        /// Kind of record.
        kind: &'static str,
        /// Its identifier.
        id: String,
        /// Identifiers of the referencing records (at most a few).
        by: Vec<String>,
    },
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InstanceBusy {
                instance_id,
                op_occ_id,
                state,
            } => write!(
                f,
                "VNF instance {instance_id} is held by operation occurrence {op_occ_id} in state {}",
                crate::model::state_str(*state)
            ),
            Self::LeaseLost {
                op_occ_id,
                owner,
                holder: Some(h),
            } => write!(
                f,
                "{owner} no longer holds the lease of operation occurrence {op_occ_id}: {h} does"
            ),
            Self::LeaseLost {
                op_occ_id,
                owner,
                holder: None,
            } => write!(
                f,
                "{owner} no longer holds the lease of operation occurrence {op_occ_id}: nobody does"
            ),
            Self::KeyTaken { key } => write!(
                f,
                "the idempotency key {key:?} was used by another request at the same time"
            ),
            Self::LeaseHeld { op_occ_id, holder } => write!(
                f,
                "operation occurrence {op_occ_id} is leased by {holder} and the lease has not expired"
            ),
            Self::Finished { op_occ_id, state } => write!(
                f,
                "operation occurrence {op_occ_id} is in the final state {}",
                crate::model::state_str(*state)
            ),
            Self::AlreadyExists { kind, id } => write!(f, "{kind} {id} already exists"),
            Self::InUse { kind, id, by } => {
                write!(f, "{kind} {id} is still used by {}", by.join(", "))
            }
        }
    }
}

impl StoreError {
    /// Whether this is a [`Conflict::LeaseLost`]: the runner must stop working on the op-occ.
    pub fn is_lease_lost(&self) -> bool {
        matches!(self, Self::Conflict(Conflict::LeaseLost { .. }))
    }

    /// Whether this is [`StoreError::Unavailable`]: the database could not be reached, and
    /// the call may succeed later.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conflict_messages_name_the_holder() {
        let e = StoreError::Conflict(Conflict::InstanceBusy {
            instance_id: "i1".into(),
            op_occ_id: VnfLcmOpOccId::new("o1"),
            state: LcmOperationStateType::FailedTemp,
        });
        assert_eq!(
            e.to_string(),
            "conflict: VNF instance i1 is held by operation occurrence o1 in state FAILED_TEMP"
        );
    }
}
