//! The registry as the runner's [`VimDirectory`]: resolving references to registered VIMs,
//! VIMs registered by lifecycle hooks, the inline credentials of requests sealed into VIMs the
//! instance owns (reused while unchanged, released once unreferenced), and the default VIM.

use async_trait::async_trait;
use vnfm_driver_api::{ResolvedVim, VimRegistration};
use vnfm_store::{ProjectScope, VimRecord};
use vnfm_types::{VimConnectionInfo, VimId, VnfInstanceId};

use super::registry::VimRegistry;
use super::store_err;
use crate::LcmError;
use crate::error::echo;
use crate::ports::{SealedVim, VimDirectory};
use crate::secrets::new_id;
use vnfm_driver_api::vim_kind::fields::pointer_token;

#[async_trait]
impl VimDirectory for VimRegistry {
    fn resolves_locally(&self) -> bool {
        true
    }

    async fn resolve(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
    ) -> Result<ResolvedVim, LcmError> {
        let Some((record, _)) = self.registered(key, info, owner, None).await? else {
            // Inline access information (or nothing to look up): used as given.
            return Ok(ResolvedVim::new(key, info.clone()));
        };
        let vim_id = &record.id;
        let full = self.refined(&record, info)?;
        tracing::debug!(vim_id = %vim_id, connection = key, "VIM resolved");
        Ok(ResolvedVim::new(key, full))
    }

    async fn check_reference(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
        caller: &ProjectScope,
    ) -> Result<Option<VimConnectionInfo>, LcmError> {
        let Some((record, usable)) = self.registered(key, info, owner, Some(caller)).await? else {
            return Ok(None);
        };
        if usable {
            return Ok(None);
        }
        tracing::info!(
            vim_id = %record.id,
            vim_project = record.project.as_deref(),
            connection = key,
            vnf_instance_id = %owner,
            "the request names a VIM of another project that its caller sees: its access information is copied into a VIM of the instance"
        );
        let mut copy = self.refined(&record, info)?;
        copy.vim_id = None;
        Ok(Some(copy))
    }

    async fn register(
        &self,
        registration: &VimRegistration,
        created_by: &VnfInstanceId,
    ) -> Result<VimConnectionInfo, LcmError> {
        let view = self
            .create(&registration.name, &registration.info, Some(created_by))
            .await?;
        Ok(VimConnectionInfo {
            vim_id: Some(view.id),
            vim_type: view.vim_type,
            interface_info: view.interface_info,
            access_info: None,
            extra: view.extra,
        })
    }

    async fn deregister(&self, vim_id: &VimId) -> Result<(), LcmError> {
        self.delete(vim_id).await
    }

    async fn seal_inline(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
        current: Option<&VimConnectionInfo>,
    ) -> Result<SealedVim, LcmError> {
        let pointer = format!("/vimConnectionInfo/{}", pointer_token(key));
        // The NFVO's vimId (if any) names the VIM in its own inventory; the sealed copy gets
        // an id of its own, so that two instances (or two operations) never collide on it.
        // The NFVO's is kept in the copy's public part, to be shown back (`shown`).
        let mut probe = info.clone();
        probe.vim_id = None;
        let mut canonical = self.canonical(&probe).map_err(|e| under(e, &pointer))?;
        canonical.vim_id = info.vim_id.clone();
        if let Some(existing) = self.reusable(current, owner, &canonical).await? {
            tracing::debug!(vim_id = %existing, connection = key, "inline VIM credentials unchanged; reusing their VIM");
            return Ok(SealedVim {
                reference: reference_to(existing, &canonical),
                created: false,
            });
        }
        let id = VimId::new(new_id());
        let mut record = self.seal(
            &id,
            &inline_name(owner, key),
            &canonical,
            Some(owner.clone()),
        )?;
        record.project = self.instance_project(owner).await?;
        // Written without the request's idempotency key: that key goes with the occurrence.
        self.store.create_vim(&record).await.map_err(store_err)?;
        tracing::info!(
            vim_id = %id,
            vim_type = %canonical.vim_type,
            connection = key,
            vnf_instance_id = %owner,
            "inline VIM credentials sealed into a VIM of the instance"
        );
        Ok(SealedVim {
            reference: reference_to(id, &canonical),
            created: true,
        })
    }

    async fn shown(
        &self,
        _key: &str,
        entry: &VimConnectionInfo,
        owner: &VnfInstanceId,
    ) -> Result<Option<VimConnectionInfo>, LcmError> {
        let (Some(id), true) = (&entry.vim_id, is_sealed_reference(entry)) else {
            return Ok(None);
        };
        let Some((record, _)) = self.store.get_vim(id).await.map_err(store_err)? else {
            return Ok(None);
        };
        if !is_inline_of(&record, owner) {
            return Ok(None);
        }
        let Ok(given) = serde_json::from_value::<VimConnectionInfo>(record.public.clone()) else {
            return Ok(None);
        };
        let secret = self.kinds.secret_members(&record.vim_type);
        let access_info = given.access_info.map(|mut a| {
            a.retain(|k, _| !secret.contains(&k.as_str()));
            a
        });
        Ok(Some(VimConnectionInfo {
            // Without the NFVO's (none given, or sealed before it was kept): the copy's own,
            // which the VIM API shows.
            vim_id: given.vim_id.or(Some(record.id)),
            vim_type: record.vim_type,
            interface_info: entry.interface_info.clone(),
            access_info: access_info.filter(|a| !a.is_empty()),
            extra: entry.extra.clone(),
        }))
    }

    async fn release_inline(
        &self,
        owner: &VnfInstanceId,
        candidates: &[VimId],
    ) -> Result<Vec<VimId>, LcmError> {
        let mut released = Vec::new();
        for id in candidates {
            if released.contains(id) {
                continue;
            }
            let Some((record, _)) = self.store.get_vim(id).await.map_err(store_err)? else {
                continue;
            };
            if is_inline_of(&record, owner) && self.delete_unused(id).await? {
                released.push(id.clone());
            }
        }
        Ok(released)
    }

    async fn default_vim(
        &self,
        project: Option<&str>,
    ) -> Result<Option<VimConnectionInfo>, LcmError> {
        Ok(self
            .default_record(project)
            .await?
            .map(|r| VimConnectionInfo {
                vim_id: Some(r.id),
                vim_type: r.vim_type,
                interface_info: None,
                access_info: None,
                extra: None,
            }))
    }

    async fn release_owned(&self, owner: &VnfInstanceId) -> Result<Vec<VimId>, LcmError> {
        let mut released = Vec::new();
        for (record, _) in self.store.vims_created_by(owner).await.map_err(store_err)? {
            if self.delete_unused(&record.id).await? {
                released.push(record.id);
            }
        }
        Ok(released)
    }
}

impl VimRegistry {
    /// The registered VIM entry `key` references, when it is a reference (`vimId` without
    /// inline `accessInfo`), of the type the entry names (if it names one), and whether
    /// instance `owner` may use it. A VIM `owner` may not use is answered as one that is not
    /// registered (Tacker's rule), unless `caller` is given and sees its project (then it is
    /// answered with `false`).
    async fn registered(
        &self,
        key: &str,
        info: &VimConnectionInfo,
        owner: &VnfInstanceId,
        caller: Option<&ProjectScope>,
    ) -> Result<Option<(VimRecord, bool)>, LcmError> {
        // An empty accessInfo carries nothing inline: treat it as a reference too.
        let inline = info.access_info.as_ref().is_some_and(|a| !a.is_empty());
        let (Some(vim_id), false) = (&info.vim_id, inline) else {
            return Ok(None);
        };
        let pointer = format!("/vimConnectionInfo/{}", pointer_token(key));
        let found = match self.store.get_vim(vim_id).await.map_err(store_err)? {
            Some((record, _)) => {
                let usable = self.usable_by(&record, owner).await?;
                let seen = caller.is_some_and(|c| c.admits(record.project.as_deref()));
                (usable || seen).then_some((record, usable))
            }
            None => None,
        };
        let Some((record, usable)) = found else {
            return Err(LcmError::UnknownVim {
                pointer,
                vim_id: vim_id.to_string(),
            });
        };
        if !info.vim_type.is_empty() && info.vim_type != record.vim_type {
            return Err(LcmError::invalid(
                format!("{pointer}/vimType"),
                format!(
                    "`{}` does not match the type of registered VIM {vim_id}: {}",
                    echo(&info.vim_type),
                    record.vim_type
                ),
            ));
        }
        Ok(Some((record, usable)))
    }

    /// The access information of registered VIM `record` (secrets decrypted), refined by the
    /// endpoints and extra (e.g. a namespace) of the entry `info` that references it.
    fn refined(
        &self,
        record: &VimRecord,
        info: &VimConnectionInfo,
    ) -> Result<VimConnectionInfo, LcmError> {
        let mut full = self.open(record)?;
        if let Some(i) = &info.interface_info {
            full.interface_info
                .get_or_insert_default()
                .extend(i.clone());
        }
        if let Some(x) = &info.extra {
            full.extra.get_or_insert_default().extend(x.clone());
        }
        Ok(full)
    }

    /// Whether instance `owner` may use VIM `record`: one of its project or one shared with
    /// every project (as Tacker's VIM lookup admits shared VIMs), or any when it belongs to no
    /// project (its callers see every project).
    async fn usable_by(&self, record: &VimRecord, owner: &VnfInstanceId) -> Result<bool, LcmError> {
        if record.shared {
            return Ok(true);
        }
        Ok(match self.instance_project(owner).await? {
            Some(project) => record.project.as_deref() == Some(project.as_str()),
            None => true,
        })
    }

    /// The VIM `current` references, when it is the inline VIM of `owner` and holds exactly
    /// `canonical` (secrets included).
    async fn reusable(
        &self,
        current: Option<&VimConnectionInfo>,
        owner: &VnfInstanceId,
        canonical: &VimConnectionInfo,
    ) -> Result<Option<VimId>, LcmError> {
        let Some(cur) = current else {
            return Ok(None);
        };
        let Some(id) = &cur.vim_id else {
            return Ok(None);
        };
        if cur.access_info.as_ref().is_some_and(|a| !a.is_empty()) {
            return Ok(None);
        }
        let Some((record, _)) = self.store.get_vim(id).await.map_err(store_err)? else {
            return Ok(None);
        };
        if !is_inline_of(&record, owner) {
            return Ok(None);
        }
        let mut stored = self.open(&record)?;
        // Compared with the NFVO's vimId the copy keeps, not the copy's own.
        stored.vim_id = record
            .public
            .get("vimId")
            .and_then(|v| v.as_str())
            .filter(|v| *v != record.id.as_str())
            .map(VimId::from);
        Ok((&stored == canonical).then(|| id.clone()))
    }

    /// Deletes `id` unless an instance references it; whether it was deleted.
    async fn delete_unused(&self, id: &VimId) -> Result<bool, LcmError> {
        match self.delete(id).await {
            Ok(()) => Ok(true),
            Err(LcmError::VimInUse { .. } | LcmError::NotFound { .. }) => Ok(false),
            // Deleted or changed concurrently: whoever did it owns the outcome.
            Err(LcmError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Name of the VIM holding the inline credentials of connection `key` of `owner`.
fn inline_name(owner: &VnfInstanceId, key: &str) -> String {
    format!("{}{key}", inline_prefix(owner))
}

fn inline_prefix(owner: &VnfInstanceId) -> String {
    format!("inline:{owner}:")
}

/// Whether `record` holds inline credentials sealed for `owner`.
fn is_inline_of(record: &VimRecord, owner: &VnfInstanceId) -> bool {
    record.created_by_instance.as_ref() == Some(owner)
        && record.name.starts_with(&inline_prefix(owner))
}

/// The `vimConnectionInfo` entry referencing the VIM `id` sealed from inline credentials: its
/// empty `accessInfo` carries nothing (a reference, as resolution reads it) and marks it for
/// [`VimDirectory::shown`].
fn reference_to(id: VimId, canonical: &VimConnectionInfo) -> VimConnectionInfo {
    VimConnectionInfo {
        vim_id: Some(id),
        vim_type: canonical.vim_type.clone(),
        interface_info: canonical.interface_info.clone(),
        access_info: Some(Default::default()),
        extra: canonical.extra.clone(),
    }
}

/// Whether `entry` is a reference [`reference_to`] made (an empty `accessInfo`).
pub(crate) fn is_sealed_reference(entry: &VimConnectionInfo) -> bool {
    entry.access_info.as_ref().is_some_and(|a| a.is_empty())
}

/// `e` with its JSON pointer (relative to a `vimConnectionInfo` entry) put under `prefix`.
fn under(e: LcmError, prefix: &str) -> LcmError {
    match e {
        LcmError::InvalidRequest { pointer, message } => LcmError::InvalidRequest {
            pointer: format!("{prefix}{pointer}"),
            message,
        },
        LcmError::Unprocessable { pointer, message } => LcmError::Unprocessable {
            pointer: format!("{prefix}{pointer}"),
            message,
        },
        other => other,
    }
}
