//! The stack itself: letting a running action finish, creating, updating, deleting, and what a step's outcome records.

use super::*;

/// How many times a template update is applied again after the driver removed the reason it
/// failed ([`OpenStackDriver::update_and_wait`]), besides once per VNFC: Heat stops at the
/// first failure, so each replaced VNFC holding volumes can cost an attempt of its own.
const TEMPLATE_RETRIES: usize = 3;

impl OpenStackDriver {
    /// Waits for an action still running on the stack (a step re-run after a crash) and
    /// returns the stack as it then is.
    pub(super) async fn settle(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: Stack,
    ) -> Result<Option<Stack>, DriverError> {
        let r = stack.reference();
        let started = std::time::Instant::now();
        let mut delay = self.config.poll.initial;
        let mut current = Some(stack);
        loop {
            let what = format!("waiting for the running action on Heat stack {}", r.name);
            match current.take() {
                None => return Ok(None),
                Some(s) if s.stack_status == "DELETE_COMPLETE" => return Ok(None),
                Some(s) if is_final(&s.stack_status) => {
                    // A failed stack can still have nested stacks at work (convergence goes on
                    // with the siblings of the resource that failed); an update now would
                    // cancel them and fail on the cancellation.
                    let busy = s.stack_status.ends_with("_FAILED")
                        && heat
                            .resources(&r, self.config.nested_depth)
                            .await?
                            .iter()
                            .any(|res| res.resource_status.ends_with("_IN_PROGRESS"));
                    if !busy {
                        return Ok(Some(s));
                    }
                    if started.elapsed() >= ctx.timeout {
                        return Err(OpenStackError::StackTimeout {
                            stack: r.name.clone(),
                            expected: "the end of the nested actions".into(),
                            last_status: s.stack_status,
                            waited: started.elapsed(),
                        }
                        .into());
                    }
                }
                Some(s) if started.elapsed() >= ctx.timeout => {
                    return Err(OpenStackError::StackTimeout {
                        stack: r.name.clone(),
                        expected: "the end of the running action".into(),
                        last_status: s.stack_status,
                        waited: started.elapsed(),
                    }
                    .into());
                }
                Some(_) => {}
            }
            sleep_within(&ctx.req.control, delay, &what).await?;
            delay = self.config.poll.next(delay);
            current = heat.show(&r).await?;
        }
    }

    /// The instance's stack, settled; `NoStack` when it does not exist.
    pub(super) async fn existing(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
    ) -> Result<Stack, DriverError> {
        let found = match heat.find(&ctx.stack_name).await? {
            Some(s) => self.settle(heat, ctx, s).await?,
            None => None,
        };
        found.ok_or_else(|| {
            OpenStackError::NoStack {
                stack: ctx.stack_name.clone(),
                instance: ctx.req.instance.id.to_string(),
            }
            .into()
        })
    }

    /// Updates the stack and waits for the update: with `PATCH` semantics (parameters merge,
    /// the template stays unless given), or, when `fields` has a template, with the complete
    /// new definition. A new template that fails for one of these reasons is applied again
    /// once the driver removed the reason (at most [`TEMPLATE_RETRIES`] times plus once per
    /// VNFC):
    ///
    /// - Neutron refused to delete a subnet it replaces, ports still holding addresses on it:
    ///   those ports move to the new subnet (module `subnets`);
    /// - Heat replaced the server of a VNFC that holds volumes, and the new server failed (on
    ///   a volume the old one still holds: Heat builds the new server first): the old server
    ///   is deleted through Nova, which releases its volumes and ports, as Tacker's package
    ///   change does for a VDU with volumes
    ///   ([`OpenStackDriver::release_replaced_volume_holders`]).
    pub(super) async fn update_and_wait(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: &Stack,
        fields: &StackFields,
    ) -> Result<Stack, DriverError> {
        let mut attempt = self.update_once(heat, ctx, stack, fields).await;
        if fields.template.is_none() {
            return attempt;
        }
        let vnfcs = inventory::recorded(&ctx.req.instance)
            .vnfc_resource_info
            .len();
        for _ in 0..TEMPLATE_RETRIES + vnfcs {
            let Err(e) = attempt else { return attempt };
            let Some(failed) = heat.show(&stack.reference()).await? else {
                return Err(e);
            };
            let moved = self
                .move_ports_off_refused_subnets(heat, ctx, &failed)
                .await?;
            let Some(settled) = self.settle(heat, ctx, failed).await? else {
                return Err(e);
            };
            let released = self
                .release_replaced_volume_holders(heat, ctx, &settled)
                .await?;
            if moved + released == 0 {
                return Err(e);
            }
            attempt = self.update_once(heat, ctx, &settled, fields).await;
        }
        attempt
    }

    /// Deletes through Nova the old servers of the VNFCs that hold volumes and whose new
    /// server Heat failed to create in `stack`: the VNFCs recorded on the instance before this
    /// step at the place (nested stack and resource name) of a `CREATE_FAILED` server. Answers
    /// how many it deleted. The next update builds the new server on the released volumes and
    /// ports, and finds the old server gone.
    pub(super) async fn release_replaced_volume_holders(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: &Stack,
    ) -> Result<usize, DriverError> {
        let recorded = inventory::recorded(&ctx.req.instance);
        let holders: Vec<&VnfcResourceInfo> = recorded
            .vnfc_resource_info
            .iter()
            .filter(|v| {
                v.storage_resource_ids
                    .as_ref()
                    .is_some_and(|s| !s.is_empty())
            })
            .collect();
        if holders.is_empty() || !ctx.session.offers(&ctx.req.control, "compute").await? {
            return Ok(0);
        }
        // The events, not the resource list: after a failed replacement Heat may list the
        // old resource under the name instead of the new one that failed (seen on the real
        // Heat). A server Heat stopped because a sibling failed is replaced too, so it counts.
        let failed: Vec<(String, String)> = heat
            .events(&stack.reference(), self.config.nested_depth)
            .await?
            .into_iter()
            .filter(|e| e.resource_status == "CREATE_FAILED" && e.during_last_action_of(stack))
            .filter_map(|e| Some((e.stack()?.id, e.resource_name)))
            .collect();
        let replaced: Vec<Target> = holders
            .into_iter()
            .filter(|old| {
                failed.iter().any(|(stack_id, name)| {
                    meta_str(old, meta_key::STACK_ID) == Some(stack_id.as_str())
                        && meta_str(old, meta_key::RESOURCE_NAME) == Some(name.as_str())
                })
            })
            .map(|old| Target {
                server: old.compute_resource.resource_id.clone(),
                vnfc: old.id.clone(),
            })
            .collect();
        if replaced.is_empty() {
            return Ok(0);
        }
        let deadline = std::time::Instant::now() + ctx.timeout;
        let nova = Nova::connect(&ctx.session, &ctx.req.control, self.config.poll.clone()).await?;
        let mut released = 0;
        for t in &replaced {
            if nova.server(&t.server).await?.is_none() {
                continue;
            }
            tracing::warn!(server = %t.server, vnfc = %t.vnfc, "Heat's new server failed while the old one holds the VNFC's volumes; deleting the old one");
            nova.delete_and_wait(t, deadline).await?;
            released += 1;
        }
        Ok(released)
    }

    /// The resources the stack `r` holds now, read as the VNFCs of `flavour` with the links
    /// recorded on the instance (and its ids, for the servers and volumes it recorded).
    pub(super) async fn live_inventory(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        r: &StackRef,
        flavour: &Flavour,
    ) -> Result<InstanceResources, DriverError> {
        let recorded = inventory::recorded(&ctx.req.instance);
        Ok(inventory::inventory(
            &heat.resources(r, self.config.nested_depth).await?,
            &InventoryInputs {
                flavour,
                vnfd_id: &ctx.req.instance.vnfd_id,
                vim_connection_id: &ctx.vim_connection_id,
                ext_virtual_links: &Self::recorded_links(ctx.req),
                ext_managed_virtual_links: &Self::recorded_managed(ctx.req),
                vnfc_states: &BTreeMap::new(),
                default_state: VnfOperationalState::Started,
                nfv: ctx.state.as_ref().map(|s| &s.nfv),
                recorded: Some(&recorded),
                vnfc_names: inventory::vnfc_names(&ctx.req.instance),
            },
            &self.config,
        ))
    }

    async fn update_once(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: &Stack,
        fields: &StackFields,
    ) -> Result<Stack, DriverError> {
        let r = stack.reference();
        if fields.template.is_some() {
            heat.replace(&r, fields).await?;
        } else {
            heat.update(&r, fields).await?;
        }
        let s = heat.wait(&r, "UPDATE", Some(stack), ctx.timeout).await?;
        s.ok_or_else(|| {
            OpenStackError::NoStack {
                stack: r.name.clone(),
                instance: ctx.req.instance.id.to_string(),
            }
            .into()
        })
    }

    /// Reads the inventory back and builds the outcome.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn outcome(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: &Stack,
        flavour: &Flavour,
        ext_links: &[ExtVirtualLinkData],
        managed: &[ExtManagedVirtualLinkInfo],
        vnfd_id: &vnfm_types::VnfdId,
        state: DriverState,
    ) -> Result<InfraOutcome, DriverError> {
        let resources = heat
            .resources(&stack.reference(), self.config.nested_depth)
            .await?;
        let before = inventory::recorded(&ctx.req.instance);
        let states: BTreeMap<String, VnfOperationalState> = before
            .vnfc_info
            .iter()
            .map(|v| (v.id.clone(), v.vnfc_state))
            .collect();
        let default_state = ctx
            .req
            .instance
            .instantiated_vnf_info
            .as_ref()
            .map(|i| i.vnf_state)
            .unwrap_or(VnfOperationalState::Started);
        let after = inventory::inventory(
            &resources,
            &InventoryInputs {
                flavour,
                vnfd_id,
                vim_connection_id: &ctx.vim_connection_id,
                ext_virtual_links: ext_links,
                ext_managed_virtual_links: managed,
                vnfc_states: &states,
                default_state,
                nfv: Some(&state.nfv),
                recorded: Some(&before),
                vnfc_names: inventory::vnfc_names(&ctx.req.instance),
            },
            &self.config,
        );
        let resource_changes = inventory::changes(&before, &after);
        Ok(InfraOutcome {
            resources: after,
            resource_changes,
            vnf_state: None,
            driver_state: serde_json::to_value(&state).unwrap_or(Value::Null),
            published_metadata: Default::default(),
        })
    }

    pub(super) fn recorded_links(req: &InfraRequest) -> Vec<ExtVirtualLinkData> {
        let info = inventory::recorded(&req.instance);
        crate::ext_links::links_from_info(&info.ext_virtual_link_info)
    }

    pub(super) fn recorded_managed(req: &InfraRequest) -> Vec<ExtManagedVirtualLinkInfo> {
        inventory::recorded(&req.instance).ext_managed_virtual_link_info
    }

    pub(super) async fn do_instantiate(
        &self,
        req: &InfraRequest,
        target: &ResourceTarget,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let flavour = flavour(req, &target.flavour_id)?;
        // Refused before anything is made: a class the driver cannot run.
        let user_data = ctx.user_data()?;
        let managed_req = managed_of_request(req).unwrap_or_default();
        let links = ext_links_of_request(req).unwrap_or_default().to_vec();
        let (hot, nfv, fields) = if let UserData::Script { file, class } = &user_data {
            // The package's class builds template, files and `nfv` (module `scripted`).
            let images = self.upload_images(&ctx, flavour).await?;
            let what = format!("user data class `{class}` of `{file}`");
            let applied = ctx
                .run_user_data((file, class), flavour, &images)
                .await?
                .created(&what)?;
            let fields = ctx.applied_fields(&self.config, &applied);
            let hot = Hot {
                source: what,
                template: applied.template.unwrap_or_default(),
                files: applied.files,
            };
            (hot, applied.nfv, fields)
        } else {
            let vnfcs = (user_data == UserData::Standard)
                .then(|| crate::userdata::next_indexes(&BTreeMap::new(), &target.vdu_instances));
            let hot = templates(&self.config, req, flavour, managed_req, vnfcs.as_ref())?;
            let images = self.upload_images(&ctx, flavour).await?;
            let nfv = build_nfv(
                &user_data,
                &paths_of(&hot.template, &hot.files),
                &NfvInputs {
                    flavour,
                    capacity: Some(&target.vdu_instances),
                    ext_virtual_links: &links,
                    additional: ctx.additional_nfv(),
                    grant: req.grant.as_deref(),
                    images: Some(&images),
                },
            );
            let fields = ctx.fields(&self.config, Some(&hot), &nfv);
            (hot, nfv, fields)
        };
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let existing = match heat.find(&ctx.stack_name).await? {
            Some(s) => self.settle(&heat, &ctx, s).await?,
            None => None,
        };
        let stack = match existing {
            None => {
                let r = heat.create(&ctx.stack_name, &fields).await?;
                heat.wait(&r, "CREATE", None, ctx.timeout)
                    .await?
                    .ok_or_else(|| OpenStackError::NoStack {
                        stack: r.name.clone(),
                        instance: req.instance.id.to_string(),
                    })?
            }
            // A re-run step: bring the existing stack to what this request asks for.
            Some(s) => self.update_and_wait(&heat, &ctx, &s, &fields).await?,
        };
        let managed = managed_info(managed_req, &req.instance.vnfd_id, &ctx.vim_connection_id);
        let state = DriverState {
            stack_id: stack.id.clone(),
            stack_name: stack.stack_name.clone(),
            vim_connection_id: ctx.vim_connection_id.clone(),
            flavour_id: flavour.id.clone(),
            vnfd_id: req.vnfd.descriptor_id.clone(),
            hot_source: hot.source.clone(),
            template: hot.template.clone(),
            files: hot.files.clone(),
            nfv,
            user_data,
            previous: None,
        };
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

    /// Uploads the software images of `flavour` that have a file in the package to Glance (or
    /// finds them there), used by this instance ([`crate::glance`]); answers their ids by
    /// image name. Images the grant chose are the NFVO's business and are not uploaded. An
    /// image whose file the package lacks (a package that names a file it does not carry; the
    /// package checks refuse such a package at onboarding) is left to its name, as before.
    pub(super) async fn upload_images(
        &self,
        ctx: &Ctx<'_>,
        flavour: &Flavour,
    ) -> Result<BTreeMap<String, String>, DriverError> {
        let req = ctx.req;
        let wanted = crate::glance::package_images(flavour, |id| {
            req.grant.as_deref().and_then(|g| g.image_for(id)).is_some()
        });
        let mut files = Vec::new();
        for (name, (sw, file)) in wanted {
            match req.artifacts.read(&file) {
                Ok(data) => files.push((name, sw, file, data)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    tracing::warn!(image = %name, %file, "the package has no file for the software image; the image must exist in Glance under its name");
                }
                Err(e) => {
                    return Err(OpenStackError::Image {
                        image: name,
                        vim: ctx.vim_connection_id.clone(),
                        message: format!("cannot read its file `{file}` from the package: {e}"),
                    }
                    .into());
                }
            }
        }
        let mut ids = BTreeMap::new();
        if files.is_empty() {
            return Ok(ids);
        }
        let glance = Glance::connect(
            &ctx.session,
            &req.control,
            self.config.poll.clone(),
            &ctx.vim_connection_id,
        )
        .await?;
        for (name, sw, file, data) in files {
            let id = glance
                .ensure(sw, &file, data, req.instance.id.as_str())
                .await?;
            ids.insert(name, id);
        }
        Ok(ids)
    }

    pub(super) async fn delete_stack(
        &self,
        req: &InfraRequest,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = match heat.find(&ctx.stack_name).await? {
            Some(s) => self.settle(&heat, &ctx, s).await?,
            None => None,
        };
        if let Some(s) = stack {
            let r = s.reference();
            heat.delete(&r).await?;
            heat.wait(&r, "DELETE", None, ctx.timeout).await?;
        }
        // The servers are gone: the instance's software images may go with them.
        if ctx.session.offers(&req.control, "image").await? {
            let glance = Glance::connect(
                &ctx.session,
                &req.control,
                self.config.poll.clone(),
                &ctx.vim_connection_id,
            )
            .await?;
            glance.release(req.instance.id.as_str()).await?;
        }
        let before = inventory::recorded(&req.instance);
        Ok(InfraOutcome {
            resource_changes: inventory::changes(&before, &InstanceResources::default()),
            resources: InstanceResources::default(),
            vnf_state: None,
            driver_state: Value::Null,
            published_metadata: Default::default(),
        })
    }
}
