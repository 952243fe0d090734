//! The grant of an occurrence: asked of the NFVO before the first step, kept with the
//! occurrence, read back for retries and rollbacks, and what it adds to the request and the
//! instance (VIM connections, external virtual links).

use super::*;

/// Op-occ data key of the grant.
pub(crate) const GRANT_KEY: &str = "grant";
/// Op-occ data key of the grant request the grant answers (hooks get both, as Tacker's
/// management scripts do).
pub(crate) const GRANT_REQUEST_KEY: &str = "grantRequest";
/// Op-occ data key of the W3C `traceparent` of the occurrence's latest run, which a run after
/// a restart links to.
pub(crate) const TRACE_CONTEXT_KEY: &str = "traceContext";

/// What asking for a grant gave.
pub(super) enum GrantAsked {
    /// The operation changes no resources through the infrastructure.
    NotNeeded,
    /// Granted (and kept with the occurrence, or about to be: [`Run::unsaved_grant`]).
    Granted,
    /// Rejected, with the NFVO's reason.
    Rejected(ProblemDetails),
}

impl Run {
    /// Asks the NFVO for the grant of the forward plan. The grant is kept with the occurrence
    /// (op-occ data `grant`) by the next write ([`Run::commit`]), so retries and rollbacks
    /// reuse it and ask for nothing new.
    pub(super) async fn request_grant(&mut self) -> Result<GrantAsked, LcmError> {
        let Some(request) = grant::grant_request(
            &self.occ,
            &self.instance,
            &self.ctx.vnfd.vnfd,
            &self.ctx.forward,
            &*self.inner.config.links,
        ) else {
            return Ok(GrantAsked::NotNeeded);
        };
        let decision = self
            .inner
            .nfvo
            .grant(&request)
            .instrument(tracing::info_span!("lcm.grant", op_occ_id = %self.occ.id))
            .await
            .map_err(|e| LcmError::Grant {
                nfvo: self.inner.nfvo.describe(),
                message: e.to_string(),
            })?;
        match decision {
            GrantDecision::Granted(g) => {
                let value = serde_json::to_value(&*g).map_err(|e| {
                    LcmError::inconsistent(format!("grant does not serialize: {e}")).because(e)
                })?;
                self.unsaved_grant = Some(value);
                match serde_json::to_value(&request) {
                    Ok(v) => self.unsaved_data.push((GRANT_REQUEST_KEY.to_owned(), v)),
                    Err(e) => tracing::warn!(error = %e, "the grant request does not serialize"),
                }
                tracing::info!(grant_id = %g.id, resources = ?grant::summary(&request), "granted");
                self.grant_request = Some(Arc::new(request));
                self.adopt_grant(Arc::new(*g))?;
                Ok(GrantAsked::Granted)
            }
            GrantDecision::Rejected(mut problem) => {
                problem.detail = format!("the NFVO rejected the grant: {}", problem.detail);
                tracing::warn!(detail = %problem.detail, "grant rejected");
                Ok(GrantAsked::Rejected(problem))
            }
        }
    }

    /// Reads the grant kept with the occurrence, if any, and adopts it; `false` when there is
    /// none.
    pub(super) async fn load_stored_grant(&mut self) -> Result<bool, LcmError> {
        let stored = self
            .inner
            .store
            .get_op_occ_data(&self.occ.id, GRANT_KEY)
            .await
            .map_err(LcmError::store)?;
        let Some(v) = stored.filter(|v| !v.is_null()) else {
            return Ok(false);
        };
        let g: Grant = serde_json::from_value(v).map_err(|e| {
            LcmError::inconsistent(format!("stored grant is unreadable: {e}")).because(e)
        })?;
        self.adopt_grant(Arc::new(g))?;
        // Kept since the hooks get it; an occurrence granted before that has none.
        self.grant_request = match self
            .inner
            .store
            .get_op_occ_data(&self.occ.id, GRANT_REQUEST_KEY)
            .await
        {
            Ok(Some(v)) => serde_json::from_value(v).ok().map(Arc::new),
            _ => None,
        };
        Ok(true)
    }

    /// Makes `grant` the occurrence's grant (its `grantId`) and merges what it adds (VIM
    /// connections, external virtual links) into the effective request, checked against the
    /// VNFD like the client's.
    pub(super) fn adopt_grant(&mut self, grant: Arc<Grant>) -> Result<(), LcmError> {
        let (request, added) = granted::merge_into_request(&self.request, &self.ctx.before, &grant);
        if !added.is_empty() {
            let op = OperationRequest::try_from(request.clone())?;
            crate::plan::validate(&op, &self.ctx.vnfd.vnfd, &self.ctx.before).map_err(|e| {
                LcmError::Grant {
                    nfvo: self.inner.nfvo.describe(),
                    message: format!(
                        "the grant's vimConnectionInfo or external virtual links do not fit the request and the VNFD: {e}"
                    ),
                }
            })?;
            tracing::info!(
                vims = ?added.vims,
                ext_virtual_links = ?added.ext_links,
                ext_managed_virtual_links = ?added.managed_links,
                "the grant adds to the operation"
            );
        }
        self.request = request;
        // SOL003 `VnfLcmOpOcc.grantId`, written with the occurrence's next write.
        self.occ.grant_id = Some(vnfm_types::GrantId::new(grant.id.clone()));
        self.grant = Some(grant);
        Ok(())
    }

    /// The instance with the operation's VIM connections (the request's, and those the grant
    /// adds to operations whose request cannot carry them); `None` when neither adds any.
    pub(super) fn with_operation_vims(&self) -> Option<VnfInstance> {
        let instance = apply::with_request_vims(&self.instance, &self.request);
        let Some(g) = &self.grant else {
            return instance;
        };
        match granted::vims_for_instance(
            &self.request,
            instance.as_ref().unwrap_or(&self.instance),
            g,
        ) {
            Some((with_vims, keys)) => {
                tracing::info!(vims = ?keys, "the grant adds VIM connections to the instance");
                Some(with_vims)
            }
            None => instance,
        }
    }

    /// Writes the operation's VIM connections into the instance when it lacks them, before
    /// the first forward step this run executes: an occurrence retried after it failed in
    /// `STARTING` (VIMs unresolvable, NFVO unreachable) never wrote them. Checked once per run,
    /// so a hook's later change to a connection is not undone.
    pub(super) async fn ensure_operation_vims(&mut self) -> Result<(), WriteError> {
        if self.operation_vims_written || self.occ.operation_state != State::Processing {
            return Ok(());
        }
        self.operation_vims_written = true;
        let Some(instance) = self
            .with_operation_vims()
            .filter(|i| i.vim_connection_info != self.instance.vim_connection_info)
        else {
            return Ok(());
        };
        let occ = self.occ.clone();
        self.commit(occ, None, Some(instance), Vec::new()).await
    }

    /// The grant of this occurrence: kept in memory, else read back from the store (after a
    /// restart or for a retry), else asked for now (an occurrence that failed before it had
    /// one). A rejection at this point fails the step.
    pub(super) async fn granted(&mut self) -> Result<Option<Arc<Grant>>, LcmError> {
        if self.grant.is_some() || self.load_stored_grant().await? {
            return Ok(self.grant.clone());
        }
        match self.request_grant().await? {
            GrantAsked::Granted | GrantAsked::NotNeeded => {
                // Asked in the middle of a run (a retry of an occurrence that failed before
                // it had one): keep it now, before the step that uses it changes anything.
                if let Some(value) = self.unsaved_grant.take() {
                    self.inner
                        .store
                        .put_op_occ_data(&self.occ.id, GRANT_KEY, &value)
                        .await
                        .map_err(LcmError::store)?;
                }
                Ok(self.grant.clone())
            }
            GrantAsked::Rejected(problem) => Err(LcmError::Grant {
                nfvo: self.inner.nfvo.describe(),
                message: problem.detail,
            }),
        }
    }
}
