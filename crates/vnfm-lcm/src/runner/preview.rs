//! Operation preview: what an operation would do, computed by the same validation and pure
//! planner as [`Lcm::start`], without creating an occurrence, taking the instance's lock, or
//! calling a driver, a hook or the NFVO.

use serde::Serialize;
use vnfm_store::ProjectScope;
use vnfm_types::{LcmOperationType, VnfInstanceId};

use super::{Lcm, apply, dependents, exec};
use crate::error::LcmError;
use crate::plan::{OperationRequest, Step, grant};

/// What an operation would do on an instance, in order.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preview {
    /// The operation.
    pub operation: LcmOperationType,
    /// The instance it would run on.
    pub vnf_instance_id: VnfInstanceId,
    /// The VNFD it would run with (for CHANGE_VNFPKG, the target VNFD).
    pub vnfd_id: String,
    /// The flavour it would run in, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flavour_id: Option<String>,
    /// The steps, in the order the runner would execute them.
    pub steps: Vec<PreviewStep>,
    /// The grant the operation would ask the NFVO for, when it changes resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<GrantPreview>,
    /// Warnings the operation would record (e.g. dependents left behind by a forced
    /// terminate).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One step of a [`Preview`].
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PreviewStep {
    /// The step's journal name (`hook:instantiate_start`, `infra:scale`...).
    pub name: String,
    /// The step as planned: a hook's artifact and inputs, an infrastructure step's targets.
    #[serde(flatten)]
    pub step: Step,
    /// For an infrastructure step: the driver that would run it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// For an infrastructure step: the VIM connections (by id) it would use.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vim_connection_ids: Vec<String>,
    /// For a hook: why the management driver could not run it, when it knows already.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// The grant request an operation would send.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GrantPreview {
    /// The NFVO it would go to (`local` for the built-in one, which grants as asked).
    pub nfvo: String,
    /// The SOL003 `GrantRequest`, without the occurrence id and links, which would only exist
    /// once the operation starts.
    pub request: serde_json::Value,
}

impl Lcm {
    /// Previews `req` on instance `id`: every check [`Lcm::start`] makes before it stores
    /// anything (state, references, bounds, drivers, CHANGE_VNFPKG compatibility, dependent
    /// instances), then the plan, each step's driver and VIMs, and the grant request. Fails
    /// with the same error the operation would; changes nothing.
    pub async fn preview(
        &self,
        id: &VnfInstanceId,
        req: OperationRequest,
    ) -> Result<Preview, LcmError> {
        self.preview_as(&ProjectScope::Nothing, id, req).await
    }

    /// [`Lcm::preview`] of a request of a caller that sees `caller`: previews what
    /// [`Lcm::start_as`] would start.
    pub async fn preview_as(
        &self,
        caller: &ProjectScope,
        id: &VnfInstanceId,
        mut req: OperationRequest,
    ) -> Result<Preview, LcmError> {
        let inner = &self.inner;
        let super::start::Checked {
            instance,
            onboarded,
            plan,
            guarded,
            ..
        } = self.checked(id, &mut req, caller, false).await?;
        let warnings = if guarded.left.is_empty() {
            Vec::new()
        } else {
            vec![dependents::forced_warning(&guarded.left)]
        };

        let params = req.to_params();
        let vims = apply::effective_vims(&instance, &params);
        let mut steps = Vec::with_capacity(plan.steps.len());
        for step in &plan.steps {
            let mut preview = PreviewStep {
                name: step.name(),
                step: step.clone(),
                driver: None,
                vim_connection_ids: Vec::new(),
                problem: None,
            };
            match step {
                Step::Infra(infra) => {
                    let flavour = infra
                        .target()
                        .map(|t| t.flavour_id.as_str())
                        .or(plan.flavour_id.as_deref());
                    let driver = exec::select_infra(
                        inner,
                        &instance,
                        &vims,
                        &onboarded.vnfd,
                        flavour,
                        &params,
                        Some(infra),
                    )?
                    .driver(None);
                    preview.driver = Some(driver.name().to_owned());
                    preview.vim_connection_ids = vims.keys().cloned().collect();
                }
                Step::Hook(hook) => {
                    preview.problem = inner
                        .mgmt
                        .as_ref()
                        .and_then(|m| m.cannot_run(&hook.artifact));
                }
                Step::ApplyModifications | Step::RevertModifications => {}
            }
            steps.push(preview);
        }

        let occ = exec::new_op_occ(inner, &instance.id, &req);
        let grant = grant::grant_request(
            &occ,
            &instance,
            &onboarded.vnfd,
            &plan,
            &*inner.config.links,
        )
        .map(|request| {
            let mut request = serde_json::to_value(&request).unwrap_or_default();
            if let Some(fields) = request.as_object_mut() {
                fields.remove("vnfLcmOpOccId");
                fields.remove("_links");
            }
            GrantPreview {
                nfvo: inner.nfvo.describe(),
                request,
            }
        });
        Ok(Preview {
            operation: req.operation_type(),
            vnf_instance_id: instance.id.clone(),
            vnfd_id: onboarded.vnfd.descriptor_id.clone(),
            flavour_id: plan.flavour_id.clone(),
            steps,
            grant,
            warnings,
        })
    }
}
