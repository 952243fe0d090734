//! [`VimRegistry`]: the VIMs registered with the VNFM, with their secrets encrypted at rest.
//!
//! A VIM is registered as a SOL003 `VimConnectionInfo` of one of the supported types: those
//! with a [`VimKind`] (each infrastructure driver provides the kind of the types it serves).
//! Registration has the kind validate it (errors name the offending attribute as a JSON
//! pointer, e.g. `/accessInfo/password`) and bring it into its canonical layout (aliases
//! folded), and stores it as two parts: the public JSON (endpoint, user name, project, CA
//! certificate, ...) and the secret values the kind names (password, application credential
//! secret, bearer token) sealed with the [`Keyring`]. [`VimRegistry::show`] returns the public part with each secret replaced by
//! `"***"`; only [`VimDirectory::resolve`] decrypts, into a [`ResolvedVim`] for a driver.
//!
//! Unknown `accessInfo` members are refused by the kinds (they could be secrets that would
//! otherwise be stored in clear); other `interfaceInfo` members and `extra` are kept as given.
//!
//! # Inline credentials in requests
//! As the runner's [`VimDirectory`], the registry also takes the `vimConnectionInfo` entries
//! that operation requests carry with inline `accessInfo` ([`VimDirectory::seal_inline`]): each
//! is validated like a registration (errors point into the request:
//! `/vimConnectionInfo/<key>/accessInfo/password`) and stored as a VIM of its own, named
//! `inline:<instanceId>:<key>` and owned by the instance (`createdByInstance`), with a new
//! `vimId` (the NFVO's `vimId`, if the entry had one, is kept in its public part). The request,
//! and everything the runner stores after it, holds only a reference to it (an empty
//! `accessInfo` marks it); an instance shows such an entry as the request gave it, with the
//! NFVO's `vimId` and without the secret members of `accessInfo` ([`VimDirectory::shown`]). An entry whose content equals the
//! VIM the instance already references under the same key reuses that VIM; otherwise a new one
//! is registered, and the one it replaces is deleted once the operation has ended and nothing
//! references it ([`VimDirectory::release_inline`]), so a rollback can put the old reference
//! back. Deleting the VNF identifier deletes the VIMs it owns ([`VimDirectory::release_owned`]).
//!
//! # Layout
//!
//! The registry's CRUD and secret sealing live in `registry`, the runner's [`VimDirectory`] with the
//! inline credentials of requests in `directory`, redaction of secrets for display in
//! `redact`, and the directory of a VNFM without a registry in `inline`.
//!
//! [`Keyring`]: crate::secrets::Keyring
//! [`VimKind`]: vnfm_driver_api::VimKind
//! [`ResolvedVim`]: vnfm_driver_api::ResolvedVim
//! [`VimDirectory`]: crate::ports::VimDirectory
//! [`VimDirectory::resolve`]: crate::ports::VimDirectory::resolve
//! [`VimDirectory::seal_inline`]: crate::ports::VimDirectory::seal_inline
//! [`VimDirectory::release_inline`]: crate::ports::VimDirectory::release_inline
//! [`VimDirectory::shown`]: crate::ports::VimDirectory::shown
//! [`VimDirectory::release_owned`]: crate::ports::VimDirectory::release_owned

use vnfm_store::StoreError;

use crate::LcmError;

mod directory;
mod inline;
mod redact;
mod registry;
#[cfg(test)]
mod tests;

pub(crate) use directory::is_sealed_reference;
pub use inline::InlineVimDirectory;
pub use redact::{
    is_secret_member, redact_access_info, redact_connection, redact_vim_connections_in,
};
pub use registry::{VimRegistry, VimUpdate, VimView};

/// What [`VimRegistry::show`] puts in place of a secret value.
pub const REDACTED: &str = "***";
/// The `extra` member (`true`) that marks the default VIM of the VIM's project: the VIM an
/// INSTANTIATE of an instance of that project uses when neither its request nor the instance
/// names one ([`VimDirectory::default_vim`]). Registering or updating a VIM with it set
/// removes it from every other VIM of the project, so each project has at most one default;
/// VIMs registered on behalf of an instance (inline credentials, hooks) are never the default.
///
/// [`VimDirectory::default_vim`]: crate::ports::VimDirectory::default_vim
pub const DEFAULT_FLAG: &str = "isDefault";
/// A store failure as an [`LcmError`]: missing records are not found, concurrent changes
/// conflicts (for records of no operation occurrence; the runner's [`crate::runner::store_err`]
/// tells busy instances and leased occurrences apart).
pub fn store_err(e: StoreError) -> LcmError {
    match e {
        StoreError::NotFound { kind, id } => LcmError::NotFound { kind, id },
        e @ (StoreError::VersionMismatch { .. } | StoreError::Conflict(_)) => {
            LcmError::conflict(e.to_string()).because(e)
        }
        other => LcmError::store(other),
    }
}
