//! Changing an instance's VNFCs: scaling, healing, and starting or stopping their servers.

use super::*;

impl OpenStackDriver {
    /// Brings the VNFC counts to `target` (scale, scale to level, rollback of a scale).
    pub(super) async fn rescale(
        &self,
        req: &InfraRequest,
        target: &ResourceTarget,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let flavour = flavour(req, &target.flavour_id)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let user_data = ctx.user_data()?;
        if user_data == UserData::Standard {
            return self
                .rescale_vnfcs(&heat, &ctx, stack, flavour, target)
                .await;
        }
        // A class of the package decides the template and `nfv` (its `scale`,
        // `scale_rollback`, ...); the VNFCs to remove from autoscaling groups are marked as
        // for any stack, those outside a group are left to the template the class returns.
        let script = match &user_data {
            UserData::Script { file, class } => Some((file.as_str(), class.as_str())),
            _ => None,
        };
        let r = stack.reference();
        let template = heat.template(&r).await?;
        let files = ctx
            .state
            .as_ref()
            .map(|s| s.files.clone())
            .unwrap_or_default();
        let scalable = hot::scalable_vdus(&paths_of(&template, &files));
        let links = Self::recorded_links(req);
        let managed = Self::recorded_managed(req);
        let live = self.live_inventory(&heat, &ctx, &r, flavour).await?;
        let recorded = inventory::recorded(&req.instance);
        let have = counts(&live);
        let mut patch = Map::new();
        let mut changed = false;
        for vdu in &flavour.vdus {
            let want = target.instances_of(&vdu.id);
            let now = have.get(&vdu.id).copied().unwrap_or(0);
            if want == now && !scalable.contains(&vdu.id) {
                continue;
            }
            if !scalable.contains(&vdu.id) && script.is_none() {
                return Err(DriverError::invalid_input(format!(
                    "VDU {} cannot go from {now} to {want} instance(s): the stack's template sets no `desired_capacity` for it (get_param [nfv, VDU, {}, desired_capacity] in an OS::Heat::AutoScalingGroup)",
                    vdu.id, vdu.id
                )));
            }
            changed |= want != now;
            if want < now {
                // VNFCs a scale-out added that the instance never recorded go first (rollback),
                // then the newest.
                let mut candidates: Vec<&VnfcResourceInfo> = live
                    .vnfc_resource_info
                    .iter()
                    .filter(|v| v.vdu_id == vdu.id)
                    .collect();
                candidates.sort_by_key(|v| {
                    let known = recorded.vnfc_resource_info.iter().any(|o| o.id == v.id);
                    (
                        !known,
                        meta_str(v, meta_key::CREATION_TIME).map(str::to_string),
                    )
                });
                let remove = now - want;
                for v in candidates.iter().rev().take(remove as usize) {
                    let (Some(pid), Some(pname), Some(member)) = (
                        meta_str(v, meta_key::PARENT_STACK_ID),
                        meta_str(v, meta_key::PARENT_STACK_NAME),
                        meta_str(v, meta_key::PARENT_RESOURCE_NAME),
                    ) else {
                        if script.is_some() {
                            continue;
                        }
                        return Err(DriverError::invalid_input(format!(
                            "cannot remove VNFC {} of VDU {}: it is not a member of an OS::Heat::AutoScalingGroup",
                            v.id, vdu.id
                        )));
                    };
                    let group = StackRef {
                        name: pname.to_string(),
                        id: pid.to_string(),
                    };
                    heat.mark_unhealthy(
                        &group,
                        member,
                        &format!("scale-in by VNF LCM operation {}", req.op_occ_id),
                    )
                    .await?;
                }
            }
            patch.insert(vdu.id.clone(), json!({ "desired_capacity": want }));
        }
        let (stack, nfv, applied) = if let Some(class) = script {
            // Tacker updates the stack with what the class returned, whatever it is.
            let images = if req.step.operation().is_rollback() {
                BTreeMap::new()
            } else {
                self.upload_images(&ctx, flavour).await?
            };
            let applied = self
                .scripted_update(&heat, &ctx, &stack, flavour, class, &images)
                .await?;
            let fields = ctx.applied_fields(&self.config, &applied);
            let stack = self.update_and_wait(&heat, &ctx, &stack, &fields).await?;
            (stack, applied.nfv.clone(), Some(applied))
        } else {
            let mut nfv = stack.nfv();
            json_patch::merge(&mut nfv, &json!({ "VDU": patch }));
            let stack = if changed || stack.stack_status.ends_with("_FAILED") {
                let fields = ctx.fields(&self.config, None, &nfv);
                self.update_and_wait(&heat, &ctx, &stack, &fields).await?
            } else {
                stack
            };
            (stack, nfv, None)
        };
        let mut state = self.state_after(&ctx, req, &stack, flavour, nfv, None);
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

    /// Scale of a stack made the way Tacker's `StandardUserData` makes it: the templates are
    /// built again with one resource per VNFC of `target` (VNFCs removed from the highest
    /// index, added at the lowest unused; [`crate::userdata`]), the VNFCs that stay keep
    /// their `nfv` entries, and the stack is updated with the whole template. Heat deletes
    /// the nested stacks of the removed VNFCs (server, ports, volumes) and creates those of
    /// the new ones.
    async fn rescale_vnfcs(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: Stack,
        flavour: &Flavour,
        target: &ResourceTarget,
    ) -> Result<InfraOutcome, DriverError> {
        let req = ctx.req;
        let template = heat.template(&stack.reference()).await?;
        let now = crate::userdata::indexes_in(&template, &vdu_ids(flavour));
        let want: BTreeMap<String, u32> = flavour
            .vdus
            .iter()
            .map(|v| (v.id.clone(), target.instances_of(&v.id)))
            .collect();
        let vnfcs = crate::userdata::next_indexes(&now, &want);
        let links = Self::recorded_links(req);
        let managed = Self::recorded_managed(req);
        let hot = templates(
            &self.config,
            req,
            flavour,
            &managed_as_data(&managed),
            Some(&vnfcs),
        )?;
        let images = self.upload_images(ctx, flavour).await?;
        let nfv = crate::userdata::scaled_nfv(
            &paths_of(&hot.template, &hot.files),
            &NfvInputs {
                flavour,
                capacity: Some(&want),
                ext_virtual_links: &links,
                additional: ctx.additional_nfv(),
                grant: req.grant.as_deref(),
                images: Some(&images),
            },
            &stack.nfv(),
        );
        let stack = if vnfcs != now || stack.stack_status.ends_with("_FAILED") {
            let fields = ctx.fields(&self.config, Some(&hot), &nfv);
            self.update_and_wait(heat, ctx, &stack, &fields).await?
        } else {
            stack
        };
        let mut state = self.state_after(ctx, req, &stack, flavour, nfv, None);
        state.template = hot.template;
        state.files = hot.files;
        state.user_data = UserData::Standard;
        self.outcome(
            heat,
            ctx,
            &stack,
            flavour,
            &links,
            &managed,
            &req.instance.vnfd_id,
            state,
        )
        .await
    }

    /// The driver state after a step that kept the templates.
    pub(super) fn state_after(
        &self,
        ctx: &Ctx<'_>,
        req: &InfraRequest,
        stack: &Stack,
        flavour: &Flavour,
        nfv: Value,
        previous: Option<Previous>,
    ) -> DriverState {
        let base = ctx.state.clone();
        DriverState {
            stack_id: stack.id.clone(),
            stack_name: stack.stack_name.clone(),
            vim_connection_id: ctx.vim_connection_id.clone(),
            flavour_id: flavour.id.clone(),
            vnfd_id: base
                .as_ref()
                .map(|b| b.vnfd_id.clone())
                .unwrap_or_else(|| req.instance.vnfd_id.to_string()),
            hot_source: base
                .as_ref()
                .map(|b| b.hot_source.clone())
                .unwrap_or_else(|| "unknown".into()),
            template: base
                .as_ref()
                .map(|b| b.template.clone())
                .unwrap_or(Value::Null),
            user_data: base
                .as_ref()
                .map(|b| b.user_data.clone())
                .unwrap_or_default(),
            files: base.map(|b| b.files).unwrap_or_default(),
            nfv,
            previous: previous.map(Box::new),
        }
    }

    /// Heals VNFCs: their servers are replaced (see [`vnfcs_to_heal`] for which) on the
    /// networks and ports the stack keeps. A whole-VNF heal with `additionalParams.all`
    /// ([`recreates`]) re-creates the stack instead, as Tacker does.
    pub(super) async fn do_heal(
        &self,
        req: &InfraRequest,
        scope: &HealScope,
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let flavour = flavour(req, &req.flavour_id)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let r = stack.reference();
        let links = Self::recorded_links(req);
        let managed = Self::recorded_managed(req);
        let user_data = ctx.user_data()?;
        // A class of the package gives the `nfv` (Tacker's `DefaultUserData.heal` an empty
        // patch: the stack's), and may give templates. It gets the package's uploaded images
        // in the grant, as Tacker's NFVO grants them for a heal: after a MODIFY_INFO that
        // changed the package, `StandardUserData.heal` rebuilds the healed VNFCs on the new
        // package's image.
        let applied = match &user_data {
            UserData::Script { file, class } => {
                let images = self.upload_images(&ctx, flavour).await?;
                Some(
                    self.scripted_update(&heat, &ctx, &stack, flavour, (file, class), &images)
                        .await?,
                )
            }
            _ => None,
        };
        let mut nfv = applied
            .as_ref()
            .map_or_else(|| stack.nfv(), |a| a.nfv.clone());
        // The driver's own StandardUserData gives the healed VNFCs the images of the grant or
        // of the current package, as Tacker's class does.
        let standard_images = match &user_data {
            UserData::Standard => Some(self.upload_images(&ctx, flavour).await?),
            _ => None,
        };
        let heal_images = |nfv: &mut Value, healed: Vec<&VnfcResourceInfo>| {
            if let Some(images) = &standard_images {
                let healed: Vec<(String, u32)> = healed.into_iter().filter_map(vdu_index).collect();
                crate::userdata::heal_images(nfv, &healed, flavour, req.grant.as_deref(), images);
            }
        };
        let stack = if recreates(scope, req.additional_params()) {
            let recorded = inventory::recorded(&req.instance);
            heal_images(&mut nfv, recorded.vnfc_resource_info.iter().collect());
            // Re-create: the same template, files and parameters on a new stack (those the
            // class returned, else the stack's).
            let template = match applied.as_ref().and_then(|a| a.template.clone()) {
                Some(t) => t,
                None => heat.template(&r).await?,
            };
            let mut files = heat.files(&r).await?;
            if let Some(a) = &applied {
                files.extend(a.files.clone());
            }
            heat.delete(&r).await?;
            heat.wait(&r, "DELETE", None, ctx.timeout).await?;
            let mut fields = match &applied {
                Some(a) => ctx.applied_fields(&self.config, a),
                None => ctx.fields(&self.config, None, &nfv),
            };
            fields.template = Some(template);
            fields.files.extend(files);
            let nr = heat.create(&ctx.stack_name, &fields).await?;
            heat.wait(&nr, "CREATE", None, ctx.timeout)
                .await?
                .ok_or_else(|| OpenStackError::NoStack {
                    stack: nr.name.clone(),
                    instance: req.instance.id.to_string(),
                })?
        } else {
            let live = self.live_inventory(&heat, &ctx, &r, flavour).await?;
            let targets = vnfcs_to_heal(scope, &live, &ctx.stack_name)?;
            heal_images(&mut nfv, targets.clone());
            self.release_errored_servers(&ctx, targets.iter().copied())
                .await?;
            let reason = format!("heal by VNF LCM operation {}", req.op_occ_id);
            // Data disks stay with the VNFC unless the request heals its storage too, as
            // Tacker heals storage only with `all`.
            let all =
                req.additional_params().and_then(|p| p.get("all")) == Some(&Value::Bool(true));
            let kept = if all {
                BTreeSet::new()
            } else {
                attached_volumes(&heat, &targets).await?
            };
            for (stack, resource) in unhealthy_marks(&live, &targets, &kept) {
                heat.mark_unhealthy(&stack, resource, &reason).await?;
            }
            let fields = match &applied {
                Some(a) => ctx.applied_fields(&self.config, a),
                None => ctx.fields(&self.config, None, &nfv),
            };
            self.update_and_wait(&heat, &ctx, &stack, &fields).await?
        };
        let mut state = self.state_after(&ctx, req, &stack, flavour, nfv, None);
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

    /// Deletes, through Nova, the servers of `vnfcs` that Nova holds in `ERROR`, before Heat
    /// replaces them: Heat's replacement takes over the server's ports, and it cannot detach
    /// them from a server in `ERROR` (Nova refuses the detach in that state, then the new
    /// server's boot fails with `Port ... is still in use`). Deleting the server releases its
    /// ports; Heat then finds it gone and builds the new one on them. Without a compute
    /// service in the catalog there is nothing to ask.
    async fn release_errored_servers<'v>(
        &self,
        ctx: &Ctx<'_>,
        vnfcs: impl Iterator<Item = &'v VnfcResourceInfo>,
    ) -> Result<(), DriverError> {
        let servers: Vec<Target> = vnfcs
            .filter(|v| {
                v.compute_resource
                    .vim_level_resource_type
                    .as_deref()
                    .is_none_or(|t| self.config.compute_types.iter().any(|c| c == t))
            })
            .map(|v| Target {
                server: v.compute_resource.resource_id.clone(),
                vnfc: v.id.clone(),
            })
            .collect();
        if servers.is_empty() || !ctx.session.offers(&ctx.req.control, "compute").await? {
            return Ok(());
        }
        let deadline = std::time::Instant::now() + ctx.timeout;
        let nova = Nova::connect(&ctx.session, &ctx.req.control, self.config.poll.clone()).await?;
        for t in &servers {
            let Some(s) = nova.server(&t.server).await? else {
                continue;
            };
            if s.status == "ERROR" {
                tracing::warn!(server = %t.server, vnfc = %t.vnfc, "Nova holds the server in ERROR; deleting it so that Heat's replacement gets its ports");
                nova.delete_and_wait(t, deadline).await?;
            }
        }
        Ok(())
    }

    /// Starts or stops the servers of the VNFCs `vnfc_ids` (every VNFC when empty) through
    /// Nova and waits until they are `ACTIVE` / `SHUTOFF`; `grace` is waited first when there
    /// is something to stop.
    pub(super) async fn do_operate(
        &self,
        req: &InfraRequest,
        to: VnfOperationalState,
        grace: Option<Duration>,
        vnfc_ids: &[String],
    ) -> Result<InfraOutcome, DriverError> {
        let ctx = self.context(req)?;
        let deadline = std::time::Instant::now() + ctx.timeout;
        let flavour = flavour(req, &req.flavour_id)?;
        let heat = Heat::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, &ctx).await?;
        let links = Self::recorded_links(req);
        let managed = Self::recorded_managed(req);
        let before = inventory::recorded(&req.instance);
        let states: BTreeMap<String, VnfOperationalState> = before
            .vnfc_info
            .iter()
            .map(|v| (v.id.clone(), v.vnfc_state))
            .collect();
        let default_state = req
            .instance
            .instantiated_vnf_info
            .as_ref()
            .map(|i| i.vnf_state)
            .unwrap_or(VnfOperationalState::Started);
        let resources = heat
            .resources(&stack.reference(), self.config.nested_depth)
            .await?;
        let nfv = ctx
            .state
            .as_ref()
            .map(|s| s.nfv.clone())
            .unwrap_or_else(|| stack.nfv());
        let inputs = |states| InventoryInputs {
            flavour,
            vnfd_id: &req.instance.vnfd_id,
            vim_connection_id: &ctx.vim_connection_id,
            ext_virtual_links: &links,
            ext_managed_virtual_links: &managed,
            vnfc_states: states,
            default_state,
            nfv: Some(&nfv),
            recorded: Some(&before),
            vnfc_names: inventory::vnfc_names(&req.instance),
        };
        let live = inventory::inventory(&resources, &inputs(&states), &self.config);
        let targets: Vec<&VnfcResourceInfo> = if vnfc_ids.is_empty() {
            live.vnfc_resource_info.iter().collect()
        } else {
            vnfc_ids
                .iter()
                .map(|id| {
                    live.vnfc_resource_info
                        .iter()
                        .find(|v| &v.id == id)
                        .ok_or_else(|| {
                            DriverError::invalid_input(format!(
                                "cannot operate VNFC {id}: stack {} has no such server",
                                ctx.stack_name
                            ))
                        })
                })
                .collect::<Result<_, _>>()?
        };
        let servers: Vec<Target> = targets
            .iter()
            .map(|v| Target {
                server: v.compute_resource.resource_id.clone(),
                vnfc: v.id.clone(),
            })
            .collect();
        // No servers, nothing to do: a VNF without compute resources has no compute service
        // to call either.
        if !servers.is_empty() {
            let power = Power::of(to);
            if let Some(g) = grace {
                sleep_within(&req.control, g, "graceful stop period").await?;
            }
            let nova = Nova::connect(&ctx.session, &req.control, self.config.poll.clone()).await?;
            // Ask every server first, then wait: they change state side by side.
            for t in &servers {
                nova.request(t, power, deadline).await?;
            }
            for t in &servers {
                nova.wait(t, power, deadline).await?;
            }
        }
        let mut now = states.clone();
        for v in &live.vnfc_info {
            let operated = v
                .vnfc_resource_info_id
                .as_ref()
                .is_some_and(|r| servers.iter().any(|t| &t.vnfc == r));
            if operated {
                now.insert(v.id.clone(), to);
            }
        }
        let after = inventory::inventory(&resources, &inputs(&now), &self.config);
        let mut resource_changes = inventory::changes(&before, &after);
        let listed: Vec<String> = resource_changes
            .affected_vnfcs
            .iter()
            .flatten()
            .map(|a| a.id.clone())
            .collect();
        for v in after
            .vnfc_resource_info
            .iter()
            .filter(|v| servers.iter().any(|t| t.vnfc == v.id) && !listed.contains(&v.id))
        {
            resource_changes
                .affected_vnfcs
                .get_or_insert_with(Vec::new)
                .push(vnfm_driver_api::inventory::affected_vnfc(
                    v,
                    ChangeType::Modified,
                ));
        }
        let state = self.state_after(&ctx, req, &stack, flavour, nfv, None);
        Ok(InfraOutcome {
            resources: after,
            resource_changes,
            vnf_state: vnfc_ids.is_empty().then_some(to),
            driver_state: serde_json::to_value(&state).unwrap_or(Value::Null),
            published_metadata: Default::default(),
        })
    }
}

/// The VDU of a VNFC made with one resource per VNFC and its index (Tacker's `vdu_idx`).
fn vdu_index(v: &VnfcResourceInfo) -> Option<(String, u32)> {
    let index = v
        .metadata
        .as_ref()?
        .get(inventory::meta_key::VDU_IDX)?
        .as_u64()?;
    Some((v.vdu_id.clone(), u32::try_from(index).ok()?))
}

/// Whether a heal re-creates the whole stack: a heal of the whole VNF (no `vnfcInstanceId`)
/// with `additionalParams.all` true, as Tacker does (its functional test expects a new
/// stack, networks included). Any other heal replaces servers only.
pub(super) fn recreates(scope: &HealScope, params: Option<&vnfm_types::KeyValuePairs>) -> bool {
    matches!(scope, HealScope::WholeVnf)
        && params.and_then(|p| p.get("all")) == Some(&Value::Bool(true))
}

/// The VNFCs a heal that keeps the stack replaces: every VNFC of the stack for a heal of the
/// whole VNF, else those the request names (an error naming the first the stack does not
/// hold).
pub(super) fn vnfcs_to_heal<'a>(
    scope: &HealScope,
    live: &'a InstanceResources,
    stack_name: &str,
) -> Result<Vec<&'a VnfcResourceInfo>, DriverError> {
    let HealScope::Vnfcs { vnfcs } = scope else {
        return Ok(live.vnfc_resource_info.iter().collect());
    };
    vnfcs
        .iter()
        .map(|h| {
            live.vnfc_resource_info
                .iter()
                .find(|v| v.id == h.vnfc_resource_id)
                .ok_or_else(|| {
                    DriverError::invalid_input(format!(
                        "cannot heal VNFC {} (VDU {}): stack {stack_name} has no such server",
                        h.vnfc_resource_id, h.vdu_id
                    ))
                })
        })
        .collect()
}

/// The volumes attached to the servers of `vnfcs` by an `OS::Cinder::VolumeAttachment`, as
/// (stack id, resource name), read from the templates of the stacks that hold them (one read
/// per stack, for VNFCs with storage only).
async fn attached_volumes(
    heat: &Heat<'_>,
    vnfcs: &[&VnfcResourceInfo],
) -> Result<BTreeSet<(String, String)>, DriverError> {
    let stacks: BTreeSet<StackRef> = vnfcs
        .iter()
        .filter(|v| v.storage_resource_ids.iter().flatten().next().is_some())
        .filter_map(|v| {
            Some(StackRef {
                name: meta_str(v, meta_key::STACK_NAME)?.to_string(),
                id: meta_str(v, meta_key::STACK_ID)?.to_string(),
            })
        })
        .collect();
    let mut out = BTreeSet::new();
    for stack in stacks {
        let template = heat.template(&stack).await?;
        for volume in hot::attached_volumes(&template) {
            out.insert((stack.id.clone(), volume));
        }
    }
    Ok(out)
}

/// The Heat resources to mark unhealthy, by (nested) stack, so that the next update replaces
/// the servers of `vnfcs` together with the volumes of their VNFCs but those in `kept` (stack
/// id, resource name): Heat builds the new server before it deletes the old one, and Cinder
/// does not let the new server boot from a volume the old one still holds; a volume made from
/// the image is the VNFC's initial state. A kept volume (a data disk attached by an
/// `OS::Cinder::VolumeAttachment`) is moved to the new server by Heat's update of the
/// attachment. Networks and ports are not marked: the new servers take the same ports.
/// VNFCs without the stack metadata (not made by this driver) are left alone.
pub(super) fn unhealthy_marks<'a>(
    live: &'a InstanceResources,
    vnfcs: &[&'a VnfcResourceInfo],
    kept: &BTreeSet<(String, String)>,
) -> Vec<(StackRef, &'a str)> {
    let mut out = Vec::new();
    for v in vnfcs {
        let (Some(stack_id), Some(name), Some(server)) = (
            meta_str(v, meta_key::STACK_ID),
            meta_str(v, meta_key::STACK_NAME),
            meta_str(v, meta_key::RESOURCE_NAME),
        ) else {
            continue;
        };
        let stack = StackRef {
            name: name.to_string(),
            id: stack_id.to_string(),
        };
        let volumes = v
            .storage_resource_ids
            .iter()
            .flatten()
            .filter_map(|storage| {
                live.virtual_storage_resource_info
                    .iter()
                    .find(|s| &s.id == storage)
                    .map(|s| s.virtual_storage_desc_id.as_str())
                    .filter(|desc| !kept.contains(&(stack_id.to_string(), desc.to_string())))
            });
        for resource in std::iter::once(server).chain(volumes) {
            out.push((stack.clone(), resource));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use vnfm_driver_api::HealVnfc;

    use super::*;

    /// Two VNFCs, each in its nested stack with its server and volume, on an internal
    /// network with their ports.
    fn live() -> InstanceResources {
        let vnfc = |i: u32| {
            json!({
                "id": format!("c{i}"), "vduId": "VDU1",
                "computeResource": {"resourceId": format!("srv-{i}"),
                                    "vimLevelResourceType": "OS::Nova::Server"},
                "storageResourceIds": [format!("st{i}")],
                "vnfcCpInfo": [{"id": format!("cp{i}"), "cpdId": "VDU1_CP1",
                                "vnfLinkPortId": format!("lp{i}")}],
                "metadata": {"stack_id": format!("n{i}"), "stack_name": format!("vnf-1-VDU1-{i}"),
                             "resource_name": "VDU1"}
            })
        };
        let storage = |i: u32| {
            json!({"id": format!("st{i}"), "virtualStorageDescId": "VDU1-VirtualStorage",
                   "storageResource": {"resourceId": format!("vol-{i}")}})
        };
        serde_json::from_value(json!({
            "vnfcResourceInfo": [vnfc(0), vnfc(1)],
            "virtualStorageResourceInfo": [storage(0), storage(1)],
            "vnfVirtualLinkResourceInfo": [{
                "id": "vl", "vnfVirtualLinkDescId": "internalVL1",
                "networkResource": {"resourceId": "net-1"},
                "vnfLinkPorts": [{"id": "lp0", "resourceHandle": {"resourceId": "port-0"}},
                                 {"id": "lp1", "resourceHandle": {"resourceId": "port-1"}}]
            }]
        }))
        .unwrap()
    }

    fn marks_keeping(scope: &HealScope, kept: &[(&str, &str)]) -> Vec<(String, String)> {
        let live = live();
        let targets = vnfcs_to_heal(scope, &live, "vnf-1").unwrap();
        let kept = kept
            .iter()
            .map(|(s, r)| (s.to_string(), r.to_string()))
            .collect();
        unhealthy_marks(&live, &targets, &kept)
            .into_iter()
            .map(|(s, r)| (s.id, r.to_string()))
            .collect()
    }

    fn marks(scope: &HealScope) -> Vec<(String, String)> {
        marks_keeping(scope, &[])
    }

    /// Tacker's `test_instantiate_attach_non_boot_volume`: a data disk attached in the
    /// VNFC's stack stays through a heal of the VNFC; the same disk in another VNFC's stack
    /// does not keep this VNFC's.
    #[test]
    fn a_kept_volume_is_not_marked_in_its_own_stack_only() {
        let one = HealScope::Vnfcs {
            vnfcs: vec![HealVnfc {
                vnfc_info_id: Some("a-001".into()),
                vnfc_resource_id: "c1".into(),
                vdu_id: "VDU1".into(),
            }],
        };
        let pair = |s: &str, r: &str| (s.to_string(), r.to_string());
        assert_eq!(
            marks_keeping(&one, &[("n1", "VDU1-VirtualStorage")]),
            vec![pair("n1", "VDU1")]
        );
        assert_eq!(
            marks_keeping(&one, &[("n0", "VDU1-VirtualStorage")]),
            vec![pair("n1", "VDU1"), pair("n1", "VDU1-VirtualStorage")]
        );
    }

    fn params(v: Value) -> vnfm_types::KeyValuePairs {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_whole_vnf_heal_replaces_every_server_and_keeps_the_stack() {
        assert!(!recreates(&HealScope::WholeVnf, None));
        assert!(!recreates(
            &HealScope::WholeVnf,
            Some(&params(json!({"all": false})))
        ));
        // The servers and their volumes of every VNFC; no network, no port.
        let pair = |s: &str, r: &str| (s.to_string(), r.to_string());
        assert_eq!(
            marks(&HealScope::WholeVnf),
            vec![
                pair("n0", "VDU1"),
                pair("n0", "VDU1-VirtualStorage"),
                pair("n1", "VDU1"),
                pair("n1", "VDU1-VirtualStorage"),
            ]
        );
    }

    #[test]
    fn a_whole_vnf_heal_with_all_re_creates_the_stack_as_tacker_does() {
        let all = params(json!({"all": true}));
        assert!(recreates(&HealScope::WholeVnf, Some(&all)));
        // A heal of VNFCs never re-creates the stack.
        let one = HealScope::Vnfcs {
            vnfcs: vec![HealVnfc {
                vnfc_info_id: None,
                vnfc_resource_id: "c1".into(),
                vdu_id: "VDU1".into(),
            }],
        };
        assert!(!recreates(&one, Some(&all)));
        assert_eq!(
            marks(&one),
            vec![
                ("n1".to_string(), "VDU1".to_string()),
                ("n1".to_string(), "VDU1-VirtualStorage".to_string())
            ]
        );
    }

    #[test]
    fn a_heal_of_a_vnfc_the_stack_does_not_hold_names_it() {
        let scope = HealScope::Vnfcs {
            vnfcs: vec![HealVnfc {
                vnfc_info_id: None,
                vnfc_resource_id: "gone".into(),
                vdu_id: "VDU1".into(),
            }],
        };
        let live = live();
        let e = vnfcs_to_heal(&scope, &live, "vnf-1").unwrap_err();
        assert!(
            e.to_string()
                .contains("cannot heal VNFC gone (VDU VDU1): stack vnf-1 has no such server"),
            "{e}"
        );
    }
}
