//! Changing what the stack is made from: external connectivity, templates of another flavour or package, and the point a rollback returns to.

use super::*;

impl OpenStackDriver {
    /// Applies the external links `links` to the stack's CP parameters.
    pub(super) async fn relink(
        &self,
        req: &InfraRequest,
        links: Vec<ExtVirtualLinkData>,
        previous: Option<Previous>,
        nfv_override: Option<Value>,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let flavour = flavour(req, &req.flavour_id)?;
        let user_data = ctx.user_data()?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let r = stack.reference();
        let (fields, nfv, applied) = if let UserData::Script { file, class } = &user_data {
            // The class's `change_ext_conn` (`_rollback`), as Tacker runs it.
            let images = BTreeMap::new();
            let applied = self
                .scripted_update(&heat, &ctx, &stack, flavour, (file, class), &images)
                .await?;
            let fields = ctx.applied_fields(&self.config, &applied);
            (fields, applied.nfv.clone(), Some(applied))
        } else {
            let nfv = match nfv_override {
                Some(n) => n,
                None => {
                    let template = heat.template(&r).await?;
                    let files = ctx
                        .state
                        .as_ref()
                        .map(|s| s.files.clone())
                        .unwrap_or_default();
                    // As Tacker's `DefaultUserData.change_ext_conn`: only the CPs the
                    // request connects change, and only in what the request says of them,
                    // merged over the stack's `nfv`; the rest (a port an INSTANTIATE's
                    // additionalParams.nfv gave, say) stays. A rollback without a restore
                    // point rebuilds every CP from the recorded links.
                    let named = match &req.request {
                        OperationParams::ChangeExtConn(r) => r.ext_virtual_links.as_slice(),
                        _ => links.as_slice(),
                    };
                    relinked_nfv(
                        stack.nfv(),
                        &user_data,
                        &paths_of(&template, &files),
                        &NfvInputs {
                            flavour,
                            capacity: None,
                            ext_virtual_links: named,
                            additional: ctx.additional_nfv(),
                            grant: req.grant.as_deref(),
                            images: None,
                        },
                    )
                }
            };
            (ctx.fields(&self.config, None, &nfv), nfv, None)
        };
        let stack = self.update_and_wait(&heat, &ctx, &stack, &fields).await?;
        let managed = Self::recorded_managed(req);
        let mut state = self.state_after(&ctx, req, &stack, flavour, nfv, previous);
        if let Some(applied) = applied {
            applied.record(&mut state, &user_data);
        }
        self.outcome(
            &heat,
            &ctx,
            &stack,
            flavour,
            &links,
            &managed,
            &req.instance.vnfd_id,
            state,
        )
        .await
    }

    /// Replaces the stack's templates (change of package or flavour, and their rollbacks);
    /// `parameters` are added to `nfv` (those a user data class returned besides it).
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn retemplate(
        &self,
        req: &InfraRequest,
        flavour: &Flavour,
        hot: Hot,
        nfv: Value,
        links: Vec<ExtVirtualLinkData>,
        managed: Vec<ExtManagedVirtualLinkInfo>,
        vnfd_id: vnfm_types::VnfdId,
        (user_data, previous): (UserData, Option<Previous>),
        parameters: Map<String, Value>,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let mut fields = ctx.fields(&self.config, Some(&hot), &nfv);
        // Parameters other than `nfv` a user data class returned.
        fields.parameters.extend(parameters);
        let stack = self.update_and_wait(&heat, &ctx, &stack, &fields).await?;
        let state = DriverState {
            stack_id: stack.id.clone(),
            stack_name: stack.stack_name.clone(),
            vim_connection_id: ctx.vim_connection_id.clone(),
            flavour_id: flavour.id.clone(),
            vnfd_id: vnfd_id.to_string(),
            hot_source: hot.source.clone(),
            template: hot.template.clone(),
            files: hot.files.clone(),
            nfv,
            user_data,
            previous: previous.map(Box::new),
        };
        self.outcome(
            &heat, &ctx, &stack, flavour, &links, &managed, &vnfd_id, state,
        )
        .await
    }

    /// Moves the stack to the templates of `flavour` (CHANGE_FLAVOUR, CHANGE_VNFPKG) with
    /// `capacity` VNFCs per VDU: the request's external and externally managed links over the
    /// recorded ones, the instance then recorded with `vnfd_id`. With `keep_previous`, the
    /// templates in force are kept in the driver state for a rollback.
    pub(super) async fn replace_templates(
        &self,
        req: &InfraRequest,
        flavour: &Flavour,
        capacity: &BTreeMap<String, u32>,
        vnfd_id: &vnfm_types::VnfdId,
        keep_previous: bool,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let managed_req = managed_of_request(req).map(<[_]>::to_vec);
        let managed_data = managed_req
            .clone()
            .unwrap_or_else(|| managed_as_data(&Self::recorded_managed(req)));
        let user_data = ctx.user_data()?;
        let links = crate::ext_links::overlay_links(
            &Self::recorded_links(req),
            ext_links_of_request(req).unwrap_or_default(),
        );
        let (hot, nfv, parameters) = if let UserData::Script { file, class } = &user_data {
            // The class's `change_vnfpkg` (`change_flavour`), on the new package.
            let images = self.upload_images(&ctx, flavour).await?;
            self.scripted_templates(&ctx, flavour, (file, class), &images)
                .await?
        } else {
            // The VNFCs keep their indexes (Tacker's `StandardUserData`).
            let vnfcs = (user_data == UserData::Standard)
                .then(|| crate::userdata::next_indexes(&ctx.recorded_indexes(flavour), capacity));
            let hot = templates(&self.config, req, flavour, &managed_data, vnfcs.as_ref())?;
            let images = self.upload_images(&ctx, flavour).await?;
            let nfv = build_nfv(
                &user_data,
                &paths_of(&hot.template, &hot.files),
                &NfvInputs {
                    flavour,
                    capacity: Some(capacity),
                    ext_virtual_links: &links,
                    additional: ctx.additional_nfv(),
                    grant: req.grant.as_deref(),
                    images: Some(&images),
                },
            );
            (hot, nfv, Map::new())
        };
        let managed = match managed_req {
            Some(m) => managed_info(&m, vnfd_id, &ctx.vim_connection_id),
            None => Self::recorded_managed(req),
        };
        let previous = if keep_previous {
            Self::previous_of(ctx.state.as_ref(), req)
        } else {
            None
        };
        self.retemplate(
            req,
            flavour,
            hot,
            nfv,
            links,
            managed,
            vnfd_id.clone(),
            (user_data, previous),
            parameters,
        )
        .await
    }

    pub(super) fn previous_of(
        ctx_state: Option<&DriverState>,
        req: &InfraRequest,
    ) -> Option<Previous> {
        let s = ctx_state?;
        Some(Previous {
            op_occ_id: req.op_occ_id.to_string(),
            vnfd_id: s.vnfd_id.clone(),
            hot_source: s.hot_source.clone(),
            template: s.template.clone(),
            files: s.files.clone(),
            nfv: s.nfv.clone(),
            user_data: s.user_data.clone(),
            ext_virtual_links: Self::recorded_links(req),
        })
    }

    /// What a rollback returns to: the state saved by the change when it succeeded in this
    /// occurrence, else the state as it was before it (the change failed).
    pub(super) fn restore_point(req: &InfraRequest) -> Option<Previous> {
        let state: DriverState = serde_json::from_value(req.driver_state.clone()).ok()?;
        if let Some(p) = state.previous.as_deref()
            && p.op_occ_id == req.op_occ_id.as_str()
        {
            return Some(p.clone());
        }
        Some(Previous {
            op_occ_id: req.op_occ_id.to_string(),
            vnfd_id: state.vnfd_id.clone(),
            hot_source: state.hot_source.clone(),
            template: state.template.clone(),
            files: state.files.clone(),
            nfv: state.nfv.clone(),
            user_data: state.user_data,
            ext_virtual_links: Self::recorded_links(req),
        })
    }
}

/// The stack's `nfv` with the CPs `inputs` connect rebuilt from them
/// ([`hot::merge_connected_cps`]).
fn relinked_nfv(
    stack_nfv: Value,
    user_data: &UserData,
    paths: &[Vec<hot::Seg>],
    inputs: &NfvInputs<'_>,
) -> Value {
    let rebuilt = build_nfv(user_data, paths, inputs);
    let indexed = matches!(user_data, UserData::Standard);
    hot::merge_connected_cps(stack_nfv, &rebuilt, inputs.ext_virtual_links, indexed)
}
