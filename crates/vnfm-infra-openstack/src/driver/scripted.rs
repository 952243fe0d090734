//! Stacks made by a user data class of the package ([`UserData::Script`]), run through the
//! driver's [`UserDataScripts`] and applied as Tacker's OpenStack driver applies what such a
//! class returns (`openstack.py`, `_make_hot` and `_update_fields`).
//!
//! The class's method for the step ([`method_name`]: `instantiate`, `scale`, `heal`,
//! `change_ext_conn`, `change_vnfpkg`, `scale_rollback`, ...) gets the request, the
//! instance, the grant request, the grant and the package (for a package change, the new
//! one), and returns stack fields ([`ScriptFields`]): `template` (YAML text), `files` (name ->
//! YAML text), `parameters` (with `nfv`) and, optionally, `existing`. How they are applied
//! ([`apply`]):
//!
//! | step | Tacker's rule, here |
//! |---|---|
//! | instantiate | the stack is created from the fields as they are (a template is required) |
//! | other steps, `existing` absent or true | `nfv` is the stack's `nfv` with the returned one merged over it (RFC 7386 merge patch); a returned template is merged over the stack's template the same way; returned files are added to (or replace) the stack's files, as Heat's `PATCH` does; without a template, the stack keeps its own |
//! | other steps, `existing: false` (a complete definition, as `StandardUserData` returns for a package change) | the returned template and `nfv` replace the stack's; files are added as above |
//!
//! The grant the class gets lists, under `vimAssets.softwareImages`, the images the driver
//! uploaded to Glance for the step that the grant does not already name, as the grant of
//! Tacker's local NFVO does (so a class reading the image from the grant gets its id).
//! Other members of the fields (Heat stack options such as `timeout_mins`) are left out:
//! the driver sets the timeout and the environment as for any stack.

use vnfm_driver_api::{UserDataCall, UserDataScripts, request_body_of};

use super::*;

/// What a user data class returned: Tacker's stack `fields`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ScriptFields {
    /// The top template, when returned.
    pub(crate) template: Option<Value>,
    /// The files, when returned.
    pub(crate) files: BTreeMap<String, String>,
    /// `parameters.nfv`, when returned.
    pub(crate) nfv: Option<Value>,
    /// The other parameters.
    pub(crate) parameters: Map<String, Value>,
    /// `existing: false`: a complete definition rather than changes.
    pub(crate) full: bool,
}

/// The stack's definition after a step that applied [`ScriptFields`].
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Applied {
    /// The whole top template to update with, or `None` to keep the stack's (a `PATCH` of
    /// the parameters).
    pub(crate) template: Option<Value>,
    /// With a template: every file of the stack; without: the returned files only (Heat adds
    /// them to the stack's).
    pub(crate) files: BTreeMap<String, String>,
    /// The `nfv` parameter.
    pub(crate) nfv: Value,
    /// The other parameters the class returned.
    pub(crate) parameters: Map<String, Value>,
}

/// The method of the class for `req`'s step: the operation in lower case, with `_rollback`
/// for a rollback step (Tacker's `grant_req.operation.lower()` and `is_rollback`).
pub(crate) fn method_name(req: &InfraRequest) -> String {
    let op = serde_json::to_value(req.operation)
        .ok()
        .and_then(|v| v.as_str().map(str::to_lowercase))
        .unwrap_or_default();
    if req.step.operation().is_rollback() {
        format!("{op}_rollback")
    } else {
        op
    }
}

impl ScriptFields {
    /// Reads what `what` (the class and method) returned.
    pub(crate) fn parse(value: Value, what: &str) -> Result<ScriptFields, DriverError> {
        let shape = |m: String| DriverError::permanent(format!("{what} returned {m}"));
        let Value::Object(mut top) = value else {
            return Err(shape("something that is not a dict".into()));
        };
        let template = match top.remove("template") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => Some(hot::parse_template(
                &format!("the template {what} returned"),
                text.as_bytes(),
            )?),
            Some(v @ Value::Object(_)) => Some(v),
            Some(_) => {
                return Err(shape(
                    "a `template` that is neither YAML text nor a dict".into(),
                ));
            }
        };
        let mut files = BTreeMap::new();
        match top.remove("files") {
            None | Some(Value::Null) => {}
            Some(Value::Object(m)) => {
                for (name, v) in m {
                    let text = match v {
                        Value::String(s) => s,
                        v @ Value::Object(_) => v.to_string(),
                        _ => {
                            return Err(shape(format!(
                                "file `{name}` that is neither YAML text nor a dict"
                            )));
                        }
                    };
                    files.insert(name, text);
                }
            }
            Some(_) => return Err(shape("`files` that is not a dict".into())),
        }
        let mut parameters = match top.remove("parameters") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Err(shape("`parameters` that is not a dict".into())),
        };
        let nfv = match parameters.remove("nfv") {
            None | Some(Value::Null) => None,
            Some(v @ Value::Object(_)) => Some(v),
            // Heat shows a JSON parameter as text; a class may return it so.
            Some(Value::String(s)) => match serde_json::from_str::<Value>(&s) {
                Ok(v @ Value::Object(_)) => Some(v),
                _ => {
                    return Err(shape(
                        "a `parameters.nfv` text that is not a JSON object".into(),
                    ));
                }
            },
            Some(_) => return Err(shape("a `parameters.nfv` that is not a dict".into())),
        };
        let full = top.get("existing") == Some(&Value::Bool(false));
        Ok(ScriptFields {
            template,
            files,
            nfv,
            parameters,
            full,
        })
    }

    /// The definition of a new stack: the fields as they are (a template is required).
    pub(crate) fn created(self, what: &str) -> Result<Applied, DriverError> {
        let Some(mut template) = self.template else {
            return Err(DriverError::permanent(format!(
                "{what} returned no `template`: a stack cannot be created without one"
            )));
        };
        // Only adds `depends_on` (see `crate::depends`): the race it avoids is the cloud's.
        crate::depends::order_after_subnets(&mut template);
        Ok(Applied {
            template: Some(template),
            files: self.files,
            nfv: self.nfv.unwrap_or_else(|| json!({})),
            parameters: self.parameters,
        })
    }
}

/// `fields` applied to a stack whose `nfv` is `nfv` and whose template and files are
/// `current` (asked of Heat only when the fields hold a template), by Tacker's rules (see the
/// [module documentation](self)).
pub(crate) fn apply(
    fields: ScriptFields,
    nfv: &Value,
    current: Option<(&Value, &BTreeMap<String, String>)>,
) -> Applied {
    let merged_nfv = match fields.nfv {
        Some(n) if fields.full => n,
        Some(patch) => {
            let mut merged = nfv.clone();
            json_patch::merge(&mut merged, &patch);
            merged
        }
        None => nfv.clone(),
    };
    let (template, files) = match (fields.template, current) {
        (None, _) => (None, fields.files),
        (Some(mut t), cur) => {
            if let Some((ct, _)) = cur.filter(|_| !fields.full) {
                let mut merged = ct.clone();
                json_patch::merge(&mut merged, &t);
                t = merged;
            }
            crate::depends::order_after_subnets(&mut t);
            let mut files = cur.map(|(_, f)| f.clone()).unwrap_or_default();
            files.extend(fields.files);
            (Some(t), files)
        }
    };
    Applied {
        template,
        files,
        nfv: merged_nfv,
        parameters: fields.parameters,
    }
}

/// Runs, with `scripts`, the method of the class `file`/`class` for `req`'s step; `images`
/// are the images the driver uploaded for it (name -> Glance id).
pub(crate) async fn run_class(
    scripts: &dyn UserDataScripts,
    req: &InfraRequest,
    (file, class): (&str, &str),
    flavour: &Flavour,
    images: &BTreeMap<String, String>,
) -> Result<ScriptFields, DriverError> {
    let call = UserDataCall {
        op_occ_id: req.op_occ_id.clone(),
        file: file.to_string(),
        class: class.to_string(),
        method: method_name(req),
        request: request_body_of(&req.request),
        instance: serde_json::to_value(&req.instance).unwrap_or(Value::Null),
        grant_request: req
            .grant_request
            .as_deref()
            .and_then(|g| serde_json::to_value(g).ok())
            .unwrap_or(Value::Null),
        grant: grant_with_images(req.grant.as_deref(), flavour, images),
        vnfd: req.vnfd.clone(),
        artifacts: req.artifacts.clone(),
        vims: req.vims.clone(),
        control: req.control.clone(),
    };
    tracing::info!(class, file, method = %call.method, "running the user data class");
    let out = scripts.run(&call).await?;
    ScriptFields::parse(out, &call.describe())
}

impl Ctx<'_> {
    /// [`run_class`] with the driver's runner.
    pub(super) async fn run_user_data(
        &self,
        class: (&str, &str),
        flavour: &Flavour,
        images: &BTreeMap<String, String>,
    ) -> Result<ScriptFields, DriverError> {
        let Some(scripts) = self.scripts.as_deref() else {
            // `Ctx::user_data` refuses the class before; this is for a caller that did not ask.
            let (file, class) = class;
            let refused = UserData::Script {
                file: file.into(),
                class: class.into(),
            }
            .runnable(false);
            return Err(refused
                .err()
                .map(Into::into)
                .unwrap_or_else(|| DriverError::invalid_input("no runner for user data classes")));
        };
        run_class(scripts, self.req, class, flavour, images).await
    }

    /// The stack fields of `applied` (with the driver's environment and timeout).
    pub(super) fn applied_fields(&self, cfg: &DriverConfig, applied: &Applied) -> StackFields {
        let mut parameters = applied.parameters.clone();
        parameters.insert("nfv".into(), applied.nfv.clone());
        let mut files = cfg.environment_files.clone();
        files.extend(applied.files.clone());
        StackFields {
            template: applied.template.clone(),
            files,
            parameters,
            environment: cfg.environment.clone(),
            timeout_mins: Some(self.timeout_mins()),
            rollback_on_failure: None,
        }
    }
}

impl OpenStackDriver {
    /// Runs the class for a step that updates `stack` and applies what it returns (Tacker's
    /// `_update_fields`): the stack's template and files are read from Heat when the class
    /// returned a template.
    pub(super) async fn scripted_update(
        &self,
        heat: &Heat<'_>,
        ctx: &Ctx<'_>,
        stack: &Stack,
        flavour: &Flavour,
        class: (&str, &str),
        images: &BTreeMap<String, String>,
    ) -> Result<Applied, DriverError> {
        let fields = ctx.run_user_data(class, flavour, images).await?;
        let current = if fields.template.is_some() {
            let r = stack.reference();
            Some((heat.template(&r).await?, heat.files(&r).await?))
        } else {
            None
        };
        Ok(apply(
            fields,
            &stack.nfv(),
            current.as_ref().map(|(t, f)| (t, f)),
        ))
    }
}

impl OpenStackDriver {
    /// For a step that replaces the templates (change of package or flavour, and the
    /// rollback of a package change): runs the class and answers the templates, `nfv` and
    /// other parameters to apply ([`OpenStackDriver::retemplate`]). When the class returned
    /// no template (as `DefaultUserData.change_vnfpkg`, which changes `nfv` only), the
    /// stack's template and files stay.
    pub(super) async fn scripted_templates(
        &self,
        ctx: &Ctx<'_>,
        flavour: &Flavour,
        (file, class): (&str, &str),
        images: &BTreeMap<String, String>,
    ) -> Result<(Hot, Value, Map<String, Value>), DriverError> {
        let heat = Heat::connect(&ctx.session, &ctx.req.control, self.config.poll.clone()).await?;
        let stack = self.existing(&heat, ctx).await?;
        let applied = self
            .scripted_update(&heat, ctx, &stack, flavour, (file, class), images)
            .await?;
        let hot = match applied.template {
            Some(template) => Hot {
                source: format!("user data class `{class}` of `{file}`"),
                template,
                files: applied.files,
            },
            None => {
                let r = stack.reference();
                let mut files = heat.files(&r).await?;
                files.extend(applied.files);
                Hot {
                    source: ctx
                        .state
                        .as_ref()
                        .map(|s| s.hot_source.clone())
                        .unwrap_or_else(|| "unknown".into()),
                    template: heat.template(&r).await?,
                    files,
                }
            }
        };
        Ok((hot, applied.nfv, applied.parameters))
    }
}

impl Applied {
    /// Records in `state` (built for a step that kept the templates) the templates the
    /// class changed, and the class.
    pub(super) fn record(self, state: &mut DriverState, user_data: &UserData) {
        if let Some(template) = self.template {
            state.template = template;
            state.files = self.files;
        }
        state.user_data = user_data.clone();
    }
}

/// `grant` (as JSON) with the uploaded `images` (name -> Glance id) of `flavour`'s VDUs and
/// virtual storages it names no image for added to `vimAssets.softwareImages`; `null` without
/// a grant.
pub(crate) fn grant_with_images(
    grant: Option<&vnfm_types::Grant>,
    flavour: &Flavour,
    images: &BTreeMap<String, String>,
) -> Value {
    let Some(grant) = grant else {
        return Value::Null;
    };
    let mut grant = grant.clone();
    let holders = flavour
        .vdus
        .iter()
        .map(|v| (&v.id, v.sw_image.as_ref()))
        .chain(
            flavour
                .virtual_storages
                .iter()
                .map(|s| (&s.id, s.sw_image.as_ref())),
        );
    for (id, sw) in holders {
        let Some(image) = sw.and_then(|sw| images.get(&sw.name)) else {
            continue;
        };
        if grant.image_for(id).is_some() {
            continue;
        }
        grant
            .vim_assets
            .get_or_insert_with(Default::default)
            .software_images
            .push(vnfm_types::VimSoftwareImage {
                vim_connection_id: None,
                vnfd_software_image_id: id.clone(),
                vim_software_image_id: image.clone(),
            });
    }
    serde_json::to_value(&grant).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(v: Value) -> ScriptFields {
        ScriptFields::parse(v, "UserData.scale").unwrap()
    }

    #[test]
    fn fields_are_read_as_tacker_returns_them() {
        let f = parsed(json!({
            "template": "heat_template_version: 2013-05-23\nresources:\n  VDU1: {type: VDU1.yaml}\n",
            "files": {"VDU1.yaml": "heat_template_version: 2013-05-23\n"},
            "parameters": {"nfv": {"VDU": {"VDU1": {"desired_capacity": 2}}}, "other": 1},
            "existing": false,
            "timeout_mins": 5
        }));
        assert_eq!(
            f.template,
            Some(json!({"heat_template_version": "2013-05-23",
                        "resources": {"VDU1": {"type": "VDU1.yaml"}}}))
        );
        assert_eq!(f.files["VDU1.yaml"], "heat_template_version: 2013-05-23\n");
        assert_eq!(
            f.nfv,
            Some(json!({"VDU": {"VDU1": {"desired_capacity": 2}}}))
        );
        assert_eq!(f.parameters, *json!({"other": 1}).as_object().unwrap());
        assert!(f.full);
        // Only `parameters`: changes, not a full definition; `nfv` as JSON text is read.
        let f = parsed(json!({"parameters": {"nfv": "{\"CP\": {}}"}}));
        assert_eq!(
            (f.template, f.nfv, f.full),
            (None, Some(json!({"CP": {}})), false)
        );
        for (bad, says) in [
            (json!({"template": 3}), "`template`"),
            (json!({"template": "a: b\n"}), "heat_template_version"),
            (json!({"files": {"a.yaml": 1}}), "file `a.yaml`"),
            (json!({"parameters": {"nfv": [1]}}), "`parameters.nfv`"),
            (json!(["x"]), "not a dict"),
        ] {
            let e = ScriptFields::parse(bad.clone(), "UserData.scale")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains(says) && e.contains("UserData.scale"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn an_update_merges_nfv_and_template_over_the_stacks_and_adds_files() {
        let nfv = json!({"VDU": {"VDU1": {"desired_capacity": 1, "computeFlavourId": "m1.tiny"}},
                         "CP": {"VDU1_CP1": {"network": "net0"}}});
        let template = json!({"heat_template_version": "2013-05-23",
                              "resources": {"VDU1": {"type": "VDU1.yaml"},
                                            "net": {"type": "OS::Neutron::Net"}}});
        let files = BTreeMap::from([("VDU1.yaml".to_string(), "old".to_string())]);

        // Tacker's DefaultUserData.scale: a patch of `nfv`, no template: a PATCH.
        let a = apply(
            parsed(json!({"parameters": {"nfv": {"VDU": {"VDU1": {"desired_capacity": 3}}}}})),
            &nfv,
            None,
        );
        assert_eq!(a.template, None);
        assert_eq!(
            a.nfv["VDU"]["VDU1"],
            json!({"desired_capacity": 3, "computeFlavourId": "m1.tiny"})
        );
        assert_eq!(a.nfv["CP"], nfv["CP"]);

        // DefaultUserData.heal: an empty `nfv`: the stack's.
        let a = apply(parsed(json!({"parameters": {"nfv": {}}})), &nfv, None);
        assert_eq!(a.nfv, nfv);

        // A template patch: merged over the stack's (null removes), files added.
        let a = apply(
            parsed(json!({
                "template": {"resources": {"net": null, "VDU2": {"type": "VDU2.yaml"}}},
                "files": {"VDU2.yaml": "new"},
                "parameters": {"nfv": {"CP": {"VDU1_CP1": {"network": "net1"}}}}
            })),
            &nfv,
            Some((&template, &files)),
        );
        assert_eq!(
            a.template.unwrap()["resources"],
            json!({"VDU1": {"type": "VDU1.yaml"}, "VDU2": {"type": "VDU2.yaml"}})
        );
        assert_eq!(
            a.files,
            BTreeMap::from([
                ("VDU1.yaml".to_string(), "old".to_string()),
                ("VDU2.yaml".to_string(), "new".to_string())
            ])
        );
        assert_eq!(a.nfv["CP"]["VDU1_CP1"]["network"], "net1");
        assert_eq!(a.nfv["VDU"], nfv["VDU"]);
    }

    #[test]
    fn a_full_definition_replaces_template_and_nfv() {
        let nfv = json!({"VDU": {"VDU1": {"desired_capacity": 1}}, "CP": {"old": {}}});
        let template = json!({"heat_template_version": "2013-05-23",
                              "resources": {"VDU1": {"type": "VDU1.yaml"}}});
        let files = BTreeMap::from([("VDU1.yaml".to_string(), "old".to_string())]);
        let a = apply(
            parsed(json!({
                "template": {"heat_template_version": "2013-05-23",
                             "resources": {"VDU1-0": {"type": "VDU1.yaml"}}},
                "files": {"VDU1.yaml": "new"},
                "parameters": {"nfv": {"VDU": {"VDU1-0": {"vcImageId": "img"}}}},
                "existing": false
            })),
            &nfv,
            Some((&template, &files)),
        );
        assert_eq!(
            a.template.unwrap()["resources"],
            json!({"VDU1-0": {"type": "VDU1.yaml"}})
        );
        assert_eq!(a.nfv, json!({"VDU": {"VDU1-0": {"vcImageId": "img"}}}));
        assert_eq!(a.files["VDU1.yaml"], "new");
    }

    #[test]
    fn a_create_needs_a_template() {
        let e = parsed(json!({"parameters": {"nfv": {}}}))
            .created("UserData.instantiate")
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("UserData.instantiate returned no `template`"),
            "{e}"
        );
    }

    /// A runner that records the calls and answers `answer`.
    struct Fake {
        answer: Value,
        seen: std::sync::Mutex<Vec<UserDataCall>>,
    }

    #[async_trait]
    impl UserDataScripts for Fake {
        async fn run(&self, call: &UserDataCall) -> Result<Value, DriverError> {
            self.seen.lock().unwrap().push(call.clone());
            Ok(self.answer.clone())
        }
    }

    fn flavour() -> Flavour {
        serde_json::from_value(json!({
            "id": "simple", "file": "Definitions/df.yaml",
            "vdus": [{"id": "VDU1", "name": "VDU1", "kind": "compute",
                      "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                      "minInstances": 1, "maxInstances": 3,
                      "swImage": {"name": "img-vdu1", "file": "Files/images/vdu1.img"}},
                     {"id": "VDU2", "name": "VDU2", "kind": "compute",
                      "nodeType": "tosca.nodes.nfv.Vdu.Compute",
                      "minInstances": 1, "maxInstances": 1,
                      "swImage": {"name": "img-vdu2"}}]
        }))
        .unwrap()
    }

    fn request(operation: vnfm_types::LcmOperationType, step: InfraStep) -> InfraRequest {
        let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(json!({
            "descriptorId": "d1", "descriptorVersion": "1.0", "provider": "Acme",
            "productName": "Demo", "softwareVersion": "1.0",
            "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
            "entryDefinitions": "Definitions/top.yaml", "flavours": []
        }))
        .unwrap();
        let instance: vnfm_types::VnfInstance = serde_json::from_value(json!({
            "id": "inst-1", "vnfdId": "d1", "vnfProvider": "Acme", "vnfProductName": "Demo",
            "vnfSoftwareVersion": "1.0", "vnfdVersion": "1.0",
            "instantiationState": "INSTANTIATED", "_links": {"self": {"href": "/i/inst-1"}}
        }))
        .unwrap();
        let scale = serde_json::from_value(json!({
            "type": "SCALE_OUT", "aspectId": "VDU1_scale",
            "additionalParams": {"lcm-operation-user-data": "./UserData/userdata.py",
                                 "lcm-operation-user-data-class": "UserData"}
        }))
        .unwrap();
        let grant: vnfm_types::Grant = serde_json::from_value(json!({
            "id": "g1", "vnfInstanceId": "inst-1", "vnfLcmOpOccId": "occ-1",
            "vimAssets": {"softwareImages": [
                {"vnfdSoftwareImageId": "VDU2", "vimSoftwareImageId": "granted-2"}]}
        }))
        .unwrap();
        let grant_request: vnfm_types::GrantRequest = serde_json::from_value(json!({
            "vnfInstanceId": "inst-1", "vnfLcmOpOccId": "occ-1", "vnfdId": "d1",
            "operation": "SCALE", "isAutomaticInvocation": false,
            "addResources": [{"id": "r1", "type": "COMPUTE", "resourceTemplateId": "VDU1"}],
            "_links": {"vnfLcmOpOcc": {"href": "/o/occ-1"}, "vnfInstance": {"href": "/i/inst-1"}}
        }))
        .unwrap();
        InfraRequest {
            op_occ_id: vnfm_types::VnfLcmOpOccId::new("occ-1"),
            operation,
            step,
            request: OperationParams::Scale(scale),
            instance,
            vnfd: Arc::new(vnfd),
            flavour_id: "simple".into(),
            vims: vec![],
            artifacts: Arc::new(vnfm_driver_api::NoArtifacts),
            driver_state: Value::Null,
            grant: Some(Arc::new(grant)),
            grant_request: Some(Arc::new(grant_request)),
            restored_package: None,
            control: vnfm_driver_api::RunControl::with_timeout(Duration::from_secs(5)),
        }
    }

    /// The class gets Tacker's arguments: the method of the step (`_rollback` in a rollback),
    /// the request body, the grant request, and the grant with the images the driver uploaded
    /// (the grant's own choice kept); what it returns is merged over the stack's `nfv`.
    #[tokio::test]
    async fn the_class_gets_the_step_the_grant_with_uploaded_images_and_its_nfv_patch_merges() {
        use vnfm_types::LcmOperationType as Op;
        let fake = Fake {
            answer: json!({"parameters": {"nfv": {"VDU": {"VDU1": {"desired_capacity": 1}}}}}),
            seen: Default::default(),
        };
        let images = BTreeMap::from([
            ("img-vdu1".to_string(), "uploaded-1".to_string()),
            ("img-vdu2".to_string(), "uploaded-2".to_string()),
        ]);
        let class = ("./UserData/userdata.py", "UserData");
        let restore = ResourceTarget::default();
        let rollback = request(Op::Scale, InfraStep::RollbackScale { restore });
        let fields = run_class(&fake, &rollback, class, &flavour(), &images)
            .await
            .unwrap();
        let call = fake.seen.lock().unwrap().pop().unwrap();
        assert_eq!(call.method, "scale_rollback");
        assert_eq!((call.file.as_str(), call.class.as_str()), class);
        assert_eq!(call.request["type"], "SCALE_OUT");
        assert_eq!(
            call.request["additionalParams"]["lcm-operation-user-data-class"],
            "UserData"
        );
        assert_eq!(call.instance["id"], "inst-1");
        assert_eq!(
            call.grant_request["addResources"][0]["resourceTemplateId"],
            "VDU1"
        );
        assert_eq!(
            call.grant["vimAssets"]["softwareImages"],
            json!([{"vnfdSoftwareImageId": "VDU2", "vimSoftwareImageId": "granted-2"},
                   {"vnfdSoftwareImageId": "VDU1", "vimSoftwareImageId": "uploaded-1"}])
        );
        let stack_nfv = json!({"VDU": {"VDU1": {"desired_capacity": 2, "vcImageId": "uploaded-1"}},
                               "CP": {"VDU1_CP1": {"network": "net0"}}});
        let applied = apply(fields, &stack_nfv, None);
        assert_eq!(
            applied.nfv,
            json!({"VDU": {"VDU1": {"desired_capacity": 1, "vcImageId": "uploaded-1"}},
                   "CP": {"VDU1_CP1": {"network": "net0"}}})
        );
        assert_eq!(
            applied.template, None,
            "no template: the stack keeps its own"
        );

        // Forward steps call the operation's method.
        for (op, step, method) in [
            (
                Op::Scale,
                InfraStep::Scale {
                    aspect_id: "VDU1_scale".into(),
                    scale_type: vnfm_types::ScaleType::ScaleOut,
                    steps: 1,
                    from: ResourceTarget::default(),
                    target: ResourceTarget::default(),
                },
                "scale",
            ),
            (
                Op::ChangeExtConn,
                InfraStep::RollbackChangeExtConn,
                "change_ext_conn_rollback",
            ),
            (
                Op::Instantiate,
                InfraStep::Instantiate {
                    target: ResourceTarget::default(),
                },
                "instantiate",
            ),
        ] {
            run_class(&fake, &request(op, step), class, &flavour(), &images)
                .await
                .unwrap();
            assert_eq!(fake.seen.lock().unwrap().pop().unwrap().method, method);
        }
    }
}
