//! VIM credentials around an operation: sealing the inline `accessInfo` of a request before
//! anything of the operation is stored, releasing the sealed VIMs nothing references once the
//! operation has ended, and redacting what the runner hands out.
//!
//! A request may carry `vimConnectionInfo` entries with inline access information (SOL003
//! allows it). [`seal_request`] passes each to [`VimDirectory::seal_inline`] and puts the
//! reference it returns in place of the entry, so the occurrence's `operationParams`, the
//! instance's `vimConnectionInfo`, the journal's plan row and the notifications only ever hold
//! the reference; the secrets stay encrypted in the registry and are decrypted only to hand a
//! driver its [`vnfm_driver_api::ResolvedVim`].
//!
//! When the operation ends (`COMPLETED`, `FAILED`, `ROLLED_BACK`), [`release_after`] offers the
//! VIMs the request and the instance before it referenced to
//! [`VimDirectory::release_inline`], which deletes the sealed ones no instance references any
//! more: those of a rolled-back request, and those a completed request replaced.

use vnfm_driver_api::vim_kind::fields::pointer_token;
use vnfm_types::{
    OperationParams, VimConnectionInfo, VimId, VnfInstance, VnfInstanceId, VnfLcmOpOcc,
    vim_connections_set, vim_connections_set_mut,
};

use super::Inner;
use crate::error::LcmError;
use crate::plan::OperationRequest;
use crate::vim::{is_sealed_reference, redact_connection, redact_vim_connections_in};

/// What sealing a request registered or reused.
#[derive(Debug, Default)]
pub(crate) struct Sealed {
    /// VIMs registered for this request (deleted again if the operation cannot start).
    pub created: Vec<VimId>,
    /// Registered VIMs the instance already referenced and the request reuses.
    pub reused: Vec<VimId>,
}

/// The connections the request's `vimConnectionInfo` sets (not those it removes), for
/// rewriting in place.
fn entries_mut(req: &mut OperationRequest) -> Vec<(String, &mut VimConnectionInfo)> {
    req.vim_changes_mut()
        .map(|c| {
            vim_connections_set_mut(c)
                .map(|(k, v)| (k.clone(), v))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces each `vimType` of `req` that is an alias a driver's VIM kind declares (OpenStack
/// Tacker's `kubernetes`, `openstack`, ...) by the type it names, so that the occurrence, the
/// instance and the driver routing only ever see the type.
pub(crate) fn name_types(inner: &Inner, req: &mut OperationRequest) {
    for (_, entry) in entries_mut(req) {
        if inner.infra.contains_key(&entry.vim_type) {
            continue;
        }
        if let Some(vim_type) = inner.vim_kinds.type_named(&entry.vim_type) {
            entry.vim_type = vim_type.to_owned();
        }
    }
}

/// The `vimId`s a stored request references.
pub(super) fn request_vim_ids(params: &OperationParams, out: &mut Vec<VimId>) {
    if let Some(changes) = params.vim_changes() {
        out.extend(vim_connections_set(changes).filter_map(|(_, e)| e.vim_id.clone()));
    }
}

/// The `vimId`s an instance references.
fn instance_vim_ids(instance: &VnfInstance) -> impl Iterator<Item = &VimId> {
    instance
        .vim_connection_info
        .iter()
        .flatten()
        .filter_map(|(_, v)| v.vim_id.as_ref())
}

/// Seals every entry of `req` that carries inline `accessInfo` (see the module docs). On error
/// the VIMs registered so far are deleted again and nothing else has been written.
pub(crate) async fn seal_request(
    inner: &Inner,
    mut req: OperationRequest,
    instance: &VnfInstance,
) -> Result<(OperationRequest, Sealed), LcmError> {
    let mut sealed = Sealed::default();
    let current = instance.vim_connection_info.as_ref();
    for (key, entry) in entries_mut(&mut req) {
        if entry.access_info.as_ref().is_none_or(|a| a.is_empty()) {
            continue;
        }
        let now = current.and_then(|m| m.get(&key));
        match inner.vims.seal_inline(&key, entry, &instance.id, now).await {
            Ok(s) => {
                let in_clear = s
                    .reference
                    .access_info
                    .as_ref()
                    .is_some_and(|a| !a.is_empty());
                if in_clear
                    && !inner
                        .warned_clear_inline
                        .swap(true, std::sync::atomic::Ordering::Relaxed)
                {
                    tracing::warn!(
                        "inline VIM credentials (accessInfo) are stored as given: no VIM registry is configured; configure an encryption keyring to store them encrypted"
                    );
                }
                let reference = !in_clear;
                match (&s.reference.vim_id, s.created, reference) {
                    (Some(id), true, _) => sealed.created.push(id.clone()),
                    (Some(id), false, true) => sealed.reused.push(id.clone()),
                    _ => {}
                }
                *entry = s.reference;
            }
            Err(e) => {
                release_created(inner, &instance.id, &sealed).await;
                return Err(credentials_refused(inner, &key, &entry.vim_type, e));
            }
        }
    }
    Ok((req, sealed))
}

/// The refusal to seal the `accessInfo` of connection `key`: a VIM type that a driver serves
/// but no VIM kind describes (a test VIM) connects without credentials, which is what is
/// wrong, not that the type is unsupported.
fn credentials_refused(inner: &Inner, key: &str, vim_type: &str, e: LcmError) -> LcmError {
    match e {
        LcmError::Unprocessable { pointer, .. }
            if pointer.ends_with("/vimType") && inner.infra.contains_key(vim_type) =>
        {
            LcmError::Unprocessable {
                pointer: format!("/vimConnectionInfo/{}/accessInfo", pointer_token(key)),
                message: format!(
                    "VIM type `{vim_type}` takes no accessInfo: its driver connects without credentials; remove accessInfo from this connection"
                ),
            }
        }
        e => e,
    }
}

/// Deletes the VIMs sealing registered for an operation that then did not start.
pub(crate) async fn release_created(inner: &Inner, owner: &VnfInstanceId, sealed: &Sealed) {
    if sealed.created.is_empty() {
        return;
    }
    if let Err(e) = inner.vims.release_inline(owner, &sealed.created).await {
        tracing::warn!(error = %e, "could not delete the VIMs sealed for an operation that did not start; they are deleted with the VNF identifier");
    }
}

/// Whether the VIMs a request reuses are still referenced by the instance as it is now (an
/// operation that ended between sealing and taking the instance's lock may have released
/// them).
pub(crate) fn still_referenced(sealed: &Sealed, instance: &VnfInstance) -> bool {
    let now: Vec<&VimId> = instance_vim_ids(instance).collect();
    sealed.reused.iter().all(|id| now.contains(&id))
}

/// After `occ` reached a final state: deletes the sealed VIMs that its request or the
/// instance `before` it referenced and that `after` (the instance as the operation left it,
/// when known) no longer does. Failures are logged, not returned: the operation has ended
/// either way, and what is left is deleted with the VNF identifier.
pub(crate) async fn release_after(
    inner: &Inner,
    occ: &VnfLcmOpOcc,
    before: Option<&VnfInstance>,
    after: Option<&VnfInstance>,
) {
    if !occ.operation_state.is_final() {
        return;
    }
    let mut ids = Vec::new();
    if let Ok(params) = occ.typed_operation_params() {
        request_vim_ids(&params, &mut ids);
    }
    if let Some(b) = before {
        ids.extend(instance_vim_ids(b).cloned());
    }
    if let Some(a) = after {
        let kept: Vec<&VimId> = instance_vim_ids(a).collect();
        ids.retain(|id| !kept.contains(&id));
    }
    ids.sort();
    ids.dedup();
    if ids.is_empty() {
        return;
    }
    match inner.vims.release_inline(&occ.vnf_instance_id, &ids).await {
        Ok(released) if !released.is_empty() => {
            tracing::info!(
                count = released.len(),
                "deleted the sealed VIM credentials the instance no longer references"
            );
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(
            error = %e,
            "could not delete sealed VIM credentials the instance no longer references; they are deleted with the VNF identifier"
        ),
    }
}

/// An instance as the API shows it: each reference to sealed inline credentials as the request
/// gave them ([`VimDirectory::shown`]: the NFVO's `vimId`, `accessInfo` without secrets), and
/// inline VIM secrets (stored as given by a directory without a registry) replaced by `"***"`.
///
/// [`VimDirectory::shown`]: crate::ports::VimDirectory::shown
pub(crate) async fn instance_view(
    inner: &Inner,
    mut instance: VnfInstance,
) -> Result<VnfInstance, LcmError> {
    let owner = instance.id.clone();
    for (key, entry) in instance.vim_connection_info.iter_mut().flatten() {
        if is_sealed_reference(entry)
            && let Some(given) = inner.vims.shown(key, entry, &owner).await?
        {
            *entry = given;
        }
        redact_connection(entry);
    }
    Ok(instance)
}

/// [`instance_view`] of an instance as a JSON document.
pub(crate) async fn instance_document_view(
    inner: &Inner,
    doc: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<(), LcmError> {
    let owner = doc
        .get("id")
        .and_then(|v| v.as_str())
        .map(VnfInstanceId::from);
    if let (Some(owner), Some(serde_json::Value::Object(map))) =
        (owner, doc.get_mut("vimConnectionInfo"))
    {
        for (key, value) in map.iter_mut() {
            // Only a sealed reference (an empty accessInfo) is looked up; the others are not
            // decoded at all, as a list shows many.
            let sealed = value
                .get("accessInfo")
                .and_then(|a| a.as_object())
                .is_some_and(|a| a.is_empty());
            if !sealed {
                continue;
            }
            let Ok(entry) = serde_json::from_value::<VimConnectionInfo>(value.clone()) else {
                continue;
            };
            if let Some(given) = inner.vims.shown(key, &entry, &owner).await?
                && let Ok(v) = serde_json::to_value(given)
            {
                *value = v;
            }
        }
    }
    redact_vim_connections_in(doc);
    Ok(())
}

/// An occurrence as the API shows it: inline VIM secrets in `operationParams` and
/// `changedInfo` replaced by `"***"`.
pub(crate) fn op_occ_view(mut occ: VnfLcmOpOcc) -> VnfLcmOpOcc {
    if let Some(p) = occ.operation_params.as_mut() {
        redact_vim_connections_in(p);
    }
    if let Some(c) = occ.changed_info.as_mut() {
        for v in c.vim_connection_info.iter_mut().flatten() {
            redact_connection(v.1);
        }
    }
    occ
}

/// A journal row as the API shows it: inline VIM secrets of the instance recorded in a plan row
/// replaced by `"***"`.
pub(crate) fn journal_entry_view(mut entry: vnfm_store::JournalEntry) -> vnfm_store::JournalEntry {
    if let Some(serde_json::Value::Object(before)) = entry.detail.get_mut("instanceBefore") {
        redact_vim_connections_in(before);
    }
    entry
}
