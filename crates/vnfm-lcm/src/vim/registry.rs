//! [`VimRegistry`]: the registered VIMs and their CRUD (create, list, show, update as a merge
//! patch, delete while unused, key rotation), sealing each VIM's secrets with the keyring, the
//! one default VIM of each project ([`DEFAULT_FLAG`]), and the redacted [`VimView`] shown to
//! users.
//!
//! A VIM belongs to a project as instances do ([`VimRegistry::create_in`]): the `*_in`
//! methods take the caller's [`ProjectScope`] and answer a VIM outside it as one that does
//! not exist; the others see every VIM.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use vnfm_store::VimRegistryStore;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use vnfm_store::{Conflict, PendingKey, ProjectScope, ScopedKind, StoreError, Version, VimRecord};
use vnfm_types::{KeyValuePairs, VimConnectionInfo, VimId, VnfInstanceId};

use vnfm_driver_api::{VimKindError, VimKinds};

use super::redact::merge_patch;
use super::{DEFAULT_FLAG, REDACTED, store_err};
use crate::LcmError;
use crate::secrets::{Keyring, new_id};

/// A registered VIM as shown to users: secrets replaced by [`REDACTED`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct VimView {
    /// `vimId`.
    pub id: VimId,
    /// Display name.
    pub name: String,
    /// `vimType`.
    pub vim_type: String,
    /// `interfaceInfo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface_info: Option<KeyValuePairs>,
    /// `accessInfo` with every secret value replaced by `"***"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_info: Option<KeyValuePairs>,
    /// `extra`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra: Option<KeyValuePairs>,
    /// The VNF instance whose lifecycle hook registered the VIM (or whose request carried it
    /// as inline credentials). While other instances use such a VIM, that instance cannot be
    /// terminated unless forced ([`crate::runner::FORCE_WITH_DEPENDENTS`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_by_instance: Option<VnfInstanceId>,
    /// The VNF instances that use the VIM (their `vimConnectionInfo` references it, or one of
    /// their resources names it), ordered by id. The VIM cannot be deleted while any does.
    #[serde(default)]
    pub used_by_instances: Vec<VnfInstanceId>,
    /// The project the VIM belongs to (absent: no project, seen only by callers that see
    /// every project).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Whether the VIM is shared with every project (Tacker's `shared`): callers of other
    /// projects see it, without its `accessInfo` and users, and their requests may name it by
    /// `vimId`; only callers that see its project change or delete it.
    #[serde(default)]
    pub shared: bool,
    /// Revision (the HTTP entity tag is `"<version>"`).
    pub version: i64,
}

/// A change to a registered VIM: each given section is applied to the stored one as a JSON
/// Merge Patch (RFC 7396: `null` removes a member). In `accessInfo`, a value `"***"` (what
/// [`VimRegistry::show`] returns for secrets) keeps the stored value, so a shown VIM can be
/// edited and sent back.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VimUpdate {
    /// New display name.
    #[serde(default)]
    pub name: Option<String>,
    /// Patch of `interfaceInfo`.
    #[serde(default)]
    pub interface_info: Option<KeyValuePairs>,
    /// Patch of `accessInfo` (may hold secrets).
    #[serde(default)]
    pub access_info: Option<KeyValuePairs>,
    /// Patch of `extra`.
    #[serde(default)]
    pub extra: Option<KeyValuePairs>,
    /// Shares the VIM with every project (`true`) or stops sharing it (`false`); refused
    /// while instances of other projects use it. The REST API lets only callers that see
    /// every project (administrators) set it, as Tacker's policy does for shared resources.
    #[serde(default)]
    pub shared: Option<bool>,
}

impl std::fmt::Debug for VimUpdate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VimUpdate")
            .field("name", &self.name)
            .field("interface_info", &self.interface_info)
            .field(
                "access_info_keys",
                &self
                    .access_info
                    .as_ref()
                    .map(|m| m.keys().collect::<Vec<_>>()),
            )
            .field("extra", &self.extra)
            .field("shared", &self.shared)
            .finish()
    }
}

/// The registered VIMs: CRUD for the API and the CLI, and the
/// [`VimDirectory`](crate::ports::VimDirectory) of the runner.
#[derive(Clone)]
pub struct VimRegistry {
    pub(super) store: Arc<dyn VimRegistryStore>,
    pub(super) keyring: Arc<Keyring>,
    pub(super) kinds: VimKinds,
}

impl std::fmt::Debug for VimRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VimRegistry")
            .field("keyring", &self.keyring)
            .field("kinds", &self.kinds)
            .finish_non_exhaustive()
    }
}

impl VimRegistry {
    /// A registry over `store` of VIMs of the types `kinds` know, sealing secrets with
    /// `keyring`.
    pub fn new(store: Arc<dyn VimRegistryStore>, keyring: Arc<Keyring>, kinds: VimKinds) -> Self {
        VimRegistry {
            store,
            keyring,
            kinds,
        }
    }

    /// `info` validated by its kind and in the kind's canonical layout. A refusal is a 400
    /// naming the attribute relative to the entry, an unknown `vimType` a 422.
    pub(super) fn canonical(
        &self,
        info: &VimConnectionInfo,
    ) -> Result<VimConnectionInfo, LcmError> {
        self.kinds.canonical(info).map_err(|e| match e {
            VimKindError::Invalid(i) => LcmError::invalid(i.pointer, i.message),
            e @ VimKindError::Unsupported { .. } => LcmError::Unprocessable {
                pointer: "/vimType".into(),
                message: e.to_string(),
            },
        })
    }

    /// Registers a VIM under `name` (its `vimId` is `info.vim_id`, or a new UUID).
    /// `created_by` marks a VIM a lifecycle hook of that instance created; such a VIM belongs
    /// to the instance's project, any other to no project ([`VimRegistry::create_in`]).
    pub async fn create(
        &self,
        name: &str,
        info: &VimConnectionInfo,
        created_by: Option<&VnfInstanceId>,
    ) -> Result<VimView, LcmError> {
        let project = match created_by {
            Some(instance) => self.instance_project(instance).await?,
            None => None,
        };
        let tenure = Tenure {
            project: project.as_deref(),
            shared: false,
            key: None,
        };
        self.register_in(name, info, created_by, tenure).await
    }

    /// Registers a VIM an operator of `project` (`None`: no project) names `name`: changed
    /// only by callers of that project and those that see every project, and seen only by
    /// them unless `shared` ([`VimView::shared`]); its [`DEFAULT_FLAG`] makes it the default
    /// VIM of `project` only.
    pub async fn create_in(
        &self,
        name: &str,
        info: &VimConnectionInfo,
        project: Option<&str>,
        shared: bool,
    ) -> Result<VimView, LcmError> {
        self.create_in_with_key(name, info, project, shared, None)
            .await
    }

    /// [`VimRegistry::create_in`] that commits `key`, the client key of a retry-safe request
    /// ([`crate::runner::keyed`]), with the VIM in the transaction that creates it; a key
    /// committed by another request first refuses the creation with nothing stored.
    pub async fn create_in_with_key(
        &self,
        name: &str,
        info: &VimConnectionInfo,
        project: Option<&str>,
        shared: bool,
        key: Option<&PendingKey>,
    ) -> Result<VimView, LcmError> {
        let tenure = Tenure {
            project,
            shared,
            key,
        };
        self.register_in(name, info, None, tenure).await
    }

    /// The project of instance `id` (`None` when it has none or is gone).
    pub(super) async fn instance_project(
        &self,
        id: &VnfInstanceId,
    ) -> Result<Option<String>, LcmError> {
        Ok(self
            .store
            .project_of(ScopedKind::Instance, id.as_str())
            .await
            .map_err(store_err)?
            .flatten())
    }

    async fn register_in(
        &self,
        name: &str,
        info: &VimConnectionInfo,
        created_by: Option<&VnfInstanceId>,
        Tenure {
            project,
            shared,
            key,
        }: Tenure<'_>,
    ) -> Result<VimView, LcmError> {
        if name.trim().is_empty() {
            return Err(LcmError::invalid("/name", "must not be empty"));
        }
        if info
            .vim_id
            .as_ref()
            .is_some_and(|v| v.as_str().trim().is_empty())
        {
            return Err(LcmError::invalid("/vimId", "must not be empty"));
        }
        let id = info.vim_id.clone().unwrap_or_else(|| VimId::new(new_id()));
        let mut info = info.clone();
        info.vim_id = Some(id.clone());
        let canonical = self.canonical(&info)?;
        let mut record = self.seal(&id, name, &canonical, created_by.cloned())?;
        record.project = project.map(str::to_owned);
        record.shared = shared;
        let version = self
            .store
            .create_vim_keyed(&record, key)
            .await
            .map_err(store_err)?;
        tracing::info!(
            vim_id = %id,
            vim_type = %canonical.vim_type,
            created_by = created_by.map(|c| c.as_str()),
            project,
            shared,
            "VIM registered"
        );
        if is_default(&record) {
            self.clear_defaults_except(&record).await?;
        }
        Ok(view(&record, version, Vec::new()))
    }

    /// All registered VIMs, redacted, ordered by id, with the instances using each.
    pub async fn list(&self) -> Result<Vec<VimView>, LcmError> {
        self.list_in(&ProjectScope::All).await
    }

    /// The registered VIMs in `scope` and those shared with every project (the latter, when
    /// outside `scope`, without their `accessInfo` and users), redacted, ordered by id, with
    /// the instances using each.
    pub async fn list_in(&self, scope: &ProjectScope) -> Result<Vec<VimView>, LcmError> {
        let records = self.store.list_vims().await.map_err(store_err)?;
        let mut usage = self.usage().await?;
        let mut out = Vec::new();
        for (r, v) in records.iter().filter(|(r, _)| readable(r, scope)) {
            let users = usage.remove(&r.id).unwrap_or_default();
            let v = seen_from(view(r, *v, Vec::new()), scope);
            out.push(self.with_users(v, users, scope).await?);
        }
        Ok(out)
    }

    /// `v` with those of `users`, the instances using it, that a caller seeing `scope` may
    /// see: a VIM's project sees only its own instances among those of every project using it
    /// when it is shared, and a VIM seen from another project shows none ([`seen_from`]).
    async fn with_users(
        &self,
        mut v: VimView,
        users: Vec<VnfInstanceId>,
        scope: &ProjectScope,
    ) -> Result<VimView, LcmError> {
        if scope.admits(v.project.as_deref()) {
            v.used_by_instances = self.users_seen_from(users, scope).await?.0;
        }
        Ok(v)
    }

    /// Of `users`, the instances using a VIM, those a caller seeing `scope` may see, and how
    /// many others (of projects it does not see) there are.
    async fn users_seen_from(
        &self,
        users: Vec<VnfInstanceId>,
        scope: &ProjectScope,
    ) -> Result<(Vec<VnfInstanceId>, usize), LcmError> {
        if matches!(scope, ProjectScope::All) {
            return Ok((users, 0));
        }
        let ids: Vec<&str> = users.iter().map(|u| u.as_str()).collect();
        let projects: HashMap<String, Option<String>> = self
            .store
            .projects_of(ScopedKind::Instance, &ids)
            .await
            .map_err(store_err)?
            .into_iter()
            .collect();
        let mut seen = Vec::with_capacity(users.len());
        let mut hidden = 0;
        for user in users {
            // An instance gone since the usage was read belongs to no project.
            let project = projects.get(user.as_str()).and_then(|p| p.as_deref());
            if scope.admits(project) {
                seen.push(user);
            } else {
                hidden += 1;
            }
        }
        Ok((seen, hidden))
    }

    /// The VIMs the hooks of `instance` registered, redacted, with the instances using each.
    pub async fn created_by(&self, instance: &VnfInstanceId) -> Result<Vec<VimView>, LcmError> {
        let records = self
            .store
            .vims_created_by(instance)
            .await
            .map_err(store_err)?;
        let mut out = Vec::with_capacity(records.len());
        for (r, v) in &records {
            out.push(view(r, *v, self.users(&r.id).await?));
        }
        Ok(out)
    }

    /// One VIM, redacted, with the instances using it. [`LcmError::NotFound`] if it is not
    /// registered.
    pub async fn show(&self, id: &VimId) -> Result<VimView, LcmError> {
        self.show_in(id, &ProjectScope::All).await
    }

    /// [`VimRegistry::show`] of a VIM in `scope`, or shared with every project (then, when
    /// outside `scope`, without its `accessInfo` and users); any other is
    /// [`LcmError::NotFound`].
    pub async fn show_in(&self, id: &VimId, scope: &ProjectScope) -> Result<VimView, LcmError> {
        let (record, version) = self
            .store
            .get_vim(id)
            .await
            .map_err(store_err)?
            .filter(|(r, _)| readable(r, scope))
            .ok_or_else(|| not_found(id))?;
        let v = seen_from(view(&record, version, Vec::new()), scope);
        self.with_users(v, self.users(id).await?, scope).await
    }

    /// The instances using VIM `id`.
    async fn users(&self, id: &VimId) -> Result<Vec<VnfInstanceId>, LcmError> {
        self.store.instances_using_vim(id).await.map_err(store_err)
    }

    /// The instances using each VIM.
    async fn usage(&self) -> Result<BTreeMap<VimId, Vec<VnfInstanceId>>, LcmError> {
        let mut out: BTreeMap<VimId, Vec<VnfInstanceId>> = BTreeMap::new();
        for (vim, instance) in self.store.vim_usage().await.map_err(store_err)? {
            out.entry(vim).or_default().push(instance);
        }
        Ok(out)
    }

    /// Applies `update` (validated like a registration; the secrets are re-encrypted with the
    /// newest key). `expected` is the version the caller read (an `If-Match`), if any.
    pub async fn update(
        &self,
        id: &VimId,
        update: &VimUpdate,
        expected: Option<Version>,
    ) -> Result<VimView, LcmError> {
        self.update_in(id, update, expected, &ProjectScope::All)
            .await
    }

    /// [`VimRegistry::update`] of a VIM in `scope`; one outside it (shared or not) is
    /// [`LcmError::NotFound`]. The VIM stays in its project.
    pub async fn update_in(
        &self,
        id: &VimId,
        update: &VimUpdate,
        expected: Option<Version>,
        scope: &ProjectScope,
    ) -> Result<VimView, LcmError> {
        let (record, version) = self.get_in(id, scope).await?;
        let changed = |current: Version| LcmError::Changed {
            kind: "VIM",
            id: id.to_string(),
            current: current.etag(),
        };
        if let Some(e) = expected
            && e != version
        {
            return Err(changed(version));
        }
        let mut info = self.open(&record)?;
        if let Some(p) = &update.interface_info {
            merge_patch(info.interface_info.get_or_insert_default(), p, false);
        }
        if let Some(p) = &update.access_info {
            merge_patch(info.access_info.get_or_insert_default(), p, true);
        }
        if let Some(p) = &update.extra {
            merge_patch(info.extra.get_or_insert_default(), p, false);
        }
        for section in [&mut info.interface_info, &mut info.extra] {
            if section.as_ref().is_some_and(|m| m.is_empty()) {
                *section = None;
            }
        }
        let canonical = self.canonical(&info)?;
        let name = match &update.name {
            Some(n) if n.trim().is_empty() => {
                return Err(LcmError::invalid("/name", "must not be empty"));
            }
            Some(n) => n.as_str(),
            None => record.name.as_str(),
        };
        let mut new = self.seal(id, name, &canonical, record.created_by_instance.clone())?;
        new.project = record.project.clone();
        new.shared = update.shared.unwrap_or(record.shared);
        if record.shared && !new.shared {
            self.refuse_unsharing_used(&record).await?;
        }
        let version = match self.store.update_vim(&new, version).await {
            Ok(v) => v,
            // Changed by another request since it was read here: a conditional update is
            // refused as stale, an unconditional one as a conflict to retry.
            Err(StoreError::VersionMismatch { found, .. }) if expected.is_some() => {
                return Err(changed(found));
            }
            Err(e) => return Err(store_err(e)),
        };
        tracing::info!(vim_id = %id, shared = new.shared, "VIM updated");
        if is_default(&new) {
            self.clear_defaults_except(&new).await?;
        }
        let v = view(&new, version, Vec::new());
        self.with_users(v, self.users(id).await?, scope).await
    }

    /// Removes the [`DEFAULT_FLAG`] from every VIM of `keep`'s project but `keep`, so that
    /// each project has at most one default VIM. A VIM changed concurrently is read again (a
    /// few times) before giving up.
    async fn clear_defaults_except(&self, keep: &VimRecord) -> Result<(), LcmError> {
        let (keep, project) = (&keep.id, &keep.project);
        for attempt in 1..=3 {
            let mut raced = false;
            for (mut record, version) in self.store.list_vims().await.map_err(store_err)? {
                if record.id == *keep || record.project != *project || !is_default(&record) {
                    continue;
                }
                if let Some(Value::Object(extra)) = record.public.get_mut("extra") {
                    extra.remove(DEFAULT_FLAG);
                    if extra.is_empty()
                        && let Some(public) = record.public.as_object_mut()
                    {
                        public.remove("extra");
                    }
                }
                match self.store.update_vim(&record, version).await {
                    Ok(_) => {
                        tracing::info!(vim_id = %record.id, default = %keep, "VIM is no longer the default");
                    }
                    Err(StoreError::VersionMismatch { .. } | StoreError::NotFound { .. })
                        if attempt < 3 =>
                    {
                        raced = true;
                    }
                    Err(e) => return Err(store_err(e)),
                }
            }
            if !raced {
                break;
            }
        }
        Ok(())
    }

    /// The default VIM of `project` (`None`: of no project): the one VIM of the project
    /// registered by an operator (not by an instance) whose `extra` holds [`DEFAULT_FLAG`]
    /// `true`. [`LcmError::Conflict`] when several do (marked concurrently).
    pub(super) async fn default_record(
        &self,
        project: Option<&str>,
    ) -> Result<Option<VimRecord>, LcmError> {
        let mut flagged: Vec<VimRecord> = self
            .store
            .list_vims()
            .await
            .map_err(store_err)?
            .into_iter()
            .map(|(r, _)| r)
            .filter(|r| r.project.as_deref() == project && is_default(r))
            .collect();
        match flagged.len() {
            0 | 1 => Ok(flagged.pop()),
            _ => Err(LcmError::conflict(format!(
                "several VIMs are marked as the default ({}); set the default again on one of them",
                flagged
                    .iter()
                    .map(|r| r.id.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        }
    }

    /// Deletes a VIM; refused with [`LcmError::VimInUse`] (naming them) while instances use it.
    pub async fn delete(&self, id: &VimId) -> Result<(), LcmError> {
        self.delete_in(id, &ProjectScope::All).await
    }

    /// [`VimRegistry::delete`] of a VIM in `scope`; one outside it (shared or not) is
    /// [`LcmError::NotFound`].
    pub async fn delete_in(&self, id: &VimId, scope: &ProjectScope) -> Result<(), LcmError> {
        let (_, version) = self.get_in(id, scope).await?;
        let (users, hidden) = self.users_seen_from(self.users(id).await?, scope).await?;
        if !users.is_empty() || hidden > 0 {
            let by = users.iter().map(|u| u.to_string()).collect();
            return Err(in_use(id, by, hidden));
        }
        match self.store.delete_vim(id, version).await {
            Ok(()) => {}
            Err(StoreError::Conflict(Conflict::InUse { by, .. })) => {
                // Used since it was read here.
                let by = by.into_iter().map(VnfInstanceId::new).collect();
                let (users, hidden) = self.users_seen_from(by, scope).await?;
                let by = users.iter().map(|u| u.to_string()).collect();
                return Err(in_use(id, by, hidden));
            }
            Err(e) => return Err(store_err(e)),
        }
        tracing::info!(vim_id = %id, "VIM deleted");
        Ok(())
    }

    /// Re-encrypts, with the newest key, the secrets of every VIM sealed with an older one;
    /// returns how many were re-encrypted.
    pub async fn rotate_secrets(&self) -> Result<usize, LcmError> {
        let mut n = 0;
        for (mut record, version) in self.store.list_vims().await.map_err(store_err)? {
            if self.keyring.is_current(&record.secret) {
                continue;
            }
            record.secret = self
                .keyring
                .rotate(&record.secret, &secret_label(&record.id))?;
            self.store
                .update_vim(&record, version)
                .await
                .map_err(store_err)?;
            n += 1;
        }
        tracing::info!(reencrypted = n, "VIM secrets rotated to the newest key");
        Ok(n)
    }

    /// VIM `id` if it is in `scope`: one of another project answers as one that does not
    /// exist, so that ids do not leak.
    async fn get_in(
        &self,
        id: &VimId,
        scope: &ProjectScope,
    ) -> Result<(VimRecord, Version), LcmError> {
        self.store
            .get_vim(id)
            .await
            .map_err(store_err)?
            .filter(|(r, _)| scope.admits(r.project.as_deref()))
            .ok_or_else(|| not_found(id))
    }

    /// Refuses to stop sharing `record` while instances of other projects use it: their
    /// operations would find no VIM.
    async fn refuse_unsharing_used(&self, record: &VimRecord) -> Result<(), LcmError> {
        let mut others = Vec::new();
        for instance in self.users(&record.id).await? {
            if self.instance_project(&instance).await? != record.project {
                others.push(instance.to_string());
            }
        }
        if others.is_empty() {
            return Ok(());
        }
        Err(LcmError::conflict(format!(
            "VIM {} cannot stop being shared: VNF instance(s) {} of other projects use it; \
             terminate them or change their vimConnectionInfo first",
            record.id,
            others.join(", ")
        )))
    }

    /// Splits the canonical `info` into public JSON and the sealed secret values.
    pub(super) fn seal(
        &self,
        id: &VimId,
        name: &str,
        info: &VimConnectionInfo,
        created_by: Option<VnfInstanceId>,
    ) -> Result<VimRecord, LcmError> {
        let mut public = info.clone();
        let mut secrets = KeyValuePairs::new();
        if let Some(access) = public.access_info.as_mut() {
            for key in self.kinds.secret_members(&info.vim_type) {
                // The public part keeps the key with a placeholder, so it shows which
                // secrets the VIM has.
                if let Some(v) = access.insert((*key).to_owned(), Value::String(REDACTED.into())) {
                    secrets.insert((*key).to_owned(), v);
                } else {
                    access.remove(*key);
                }
            }
        }
        let public = serde_json::to_value(&public).map_err(|e| {
            LcmError::inconsistent(format!("VIM {id} does not serialize: {e}")).because(e)
        })?;
        let plain = serde_json::to_vec(&secrets).map_err(|e| {
            LcmError::inconsistent(format!("VIM {id} does not serialize: {e}")).because(e)
        })?;
        Ok(VimRecord {
            id: id.clone(),
            name: name.to_owned(),
            vim_type: info.vim_type.clone(),
            public,
            secret: self.keyring.encrypt(&plain),
            created_by_instance: created_by,
            project: None,
            shared: false,
        })
    }

    /// The full connection info of a record, secrets decrypted.
    pub(super) fn open(&self, record: &VimRecord) -> Result<VimConnectionInfo, LcmError> {
        let corrupt = |why: String| {
            LcmError::inconsistent(format!("stored VIM {} is unreadable: {why}", record.id))
        };
        let mut info: VimConnectionInfo =
            serde_json::from_value(record.public.clone()).map_err(|e| corrupt(e.to_string()))?;
        let plain = self
            .keyring
            .decrypt(&record.secret, &secret_label(&record.id))?;
        // The serde error of a secret document could quote it: give only its position.
        let secrets: KeyValuePairs = serde_json::from_slice(&plain).map_err(|e| {
            corrupt(format!(
                "its decrypted secrets are not a JSON object (line {}, column {})",
                e.line(),
                e.column()
            ))
        })?;
        if !secrets.is_empty() {
            info.access_info.get_or_insert_default().extend(secrets);
        }
        info.vim_id = Some(record.id.clone());
        Ok(info)
    }
}

/// Whether `record` is a VIM an operator registered (not an instance) and marked as the
/// default.
fn is_default(record: &VimRecord) -> bool {
    record.created_by_instance.is_none()
        && record
            .public
            .get("extra")
            .and_then(|e| e.get(DEFAULT_FLAG))
            .and_then(Value::as_bool)
            .unwrap_or(false)
}

fn secret_label(id: &VimId) -> String {
    format!("the secrets of VIM {id}")
}

/// The refusal to delete VIM `id` while the instances `by` and `hidden` more of projects the
/// caller does not see (counted, not named) use it.
fn in_use(id: &VimId, mut by: Vec<String>, hidden: usize) -> LcmError {
    const SHOWN: usize = 10;
    let more = by.len().saturating_sub(SHOWN);
    by.truncate(SHOWN);
    if more > 0 {
        by.push(format!("and {more} more"));
    }
    if hidden > 0 {
        by.push(format!("{hidden} of other projects"));
    }
    LcmError::VimInUse {
        vim_id: id.to_string(),
        instances: by,
    }
}

fn view(record: &VimRecord, version: Version, used_by: Vec<VnfInstanceId>) -> VimView {
    let info: Option<VimConnectionInfo> = serde_json::from_value(record.public.clone()).ok();
    // The public part holds every secret as "***" already (see `seal`).
    let (interface_info, access_info, extra) = match info {
        Some(i) => (i.interface_info, i.access_info, i.extra),
        None => (None, None, None),
    };
    VimView {
        id: record.id.clone(),
        name: record.name.clone(),
        vim_type: record.vim_type.clone(),
        interface_info,
        access_info,
        extra,
        created_by_instance: record.created_by_instance.clone(),
        used_by_instances: used_by,
        project: record.project.clone(),
        shared: record.shared,
        version: version.0,
    }
}

/// Who a VIM belongs to: its project (`None`: none) and whether it is shared with every
/// project.
#[derive(Clone, Copy)]
struct Tenure<'a> {
    project: Option<&'a str>,
    shared: bool,
    /// The client key committed with the VIM.
    key: Option<&'a PendingKey>,
}

/// Whether a caller that sees `scope` may read VIM `record`: one of its scope, or one shared
/// with every project.
fn readable(record: &VimRecord, scope: &ProjectScope) -> bool {
    record.shared || scope.admits(record.project.as_deref())
}

/// `v` as a caller that sees `scope` may read it: a shared VIM of another project without its
/// access information (names and secrets of its account) and the instances using it.
fn seen_from(mut v: VimView, scope: &ProjectScope) -> VimView {
    if !scope.admits(v.project.as_deref()) {
        v.access_info = None;
        v.used_by_instances.clear();
    }
    v
}

fn not_found(id: &VimId) -> LcmError {
    LcmError::NotFound {
        kind: "VIM",
        id: id.to_string(),
    }
}
