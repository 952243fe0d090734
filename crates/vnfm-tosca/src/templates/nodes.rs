//! Node templates: properties, attributes, capabilities, requirements and their targets.

use super::*;

impl<'g> Builder<'_, 'g> {
    pub(super) fn node_template(&mut self, key: &'g Key, node: &'g Node) -> NodeTemplate {
        let mut t = NodeTemplate {
            name: key.name.as_str().to_owned(),
            pos: key.pos,
            type_name: String::new(),
            ty: None,
            properties: IndexMap::new(),
            assigned: Vec::new(),
            requirements: Vec::new(),
            capabilities: IndexMap::new(),
            operations: Vec::new(),
            artifacts: Vec::new(),
        };
        let mut problems = Vec::new();
        let Some(map) = node.as_map() else {
            problems.push(types::wrong_shape(
                node,
                &format!("node template `{}`", key.name),
                "a map",
            ));
            self.problems(problems);
            return t;
        };
        for (k, _) in map {
            if !NODE_TEMPLATE_KEYWORDS.contains(&k.name.as_str()) {
                problems.push(
                    Problem::error(
                        "tosca.unknown-keyword",
                        k.pos,
                        format!("`{}` is not a keyword of a node template", k.name),
                    )
                    .with_help(format!(
                        "allowed here: {}",
                        NODE_TEMPLATE_KEYWORDS.join(", ")
                    )),
                );
            }
        }
        let type_name = match node.get("type") {
            Some(tn) => types::named(tn, "type", &mut problems),
            None => {
                problems.push(Problem::error(
                    "tosca.missing-keyword",
                    key.pos,
                    format!("node template `{}` has no `type`", key.name),
                ));
                None
            }
        };
        self.problems(problems);
        let Some(type_name) = type_name else {
            return t;
        };
        t.type_name = type_name.name.clone();
        t.ty = self
            .types
            .resolve(&type_name, Kind::Node, self.file, self.sink);
        let Some(ty) = t.ty else {
            return t;
        };
        let flat = self.types.flat(ty);
        let owner = format!("node template `{}`", key.name);

        // Properties.
        let mut problems = Vec::new();
        let assigned = match node.get_entry("properties") {
            Some((pk, pv)) => types::entries(pv, pk.pos, "properties", &mut problems),
            None => &[],
        };
        self.problems(problems);
        let resolved = self.resolve_entries(assigned);
        let display = self.display;
        let is_vnf = self.types.derives_from_name(ty, VNF_TYPE);
        let mut checker = self.checker();
        checker.vnf_mode = is_vnf;
        checker.check_properties(&resolved, &flat.properties, key.pos, &owner, display);
        t.assigned = resolved
            .iter()
            .filter(|(_, v)| !v.is_null())
            .map(|(k, _)| k.name.as_str().to_owned())
            .collect();
        t.properties = with_defaults(&resolved, &flat.properties);

        // Attributes.
        if let Some((ak, av)) = node.get_entry("attributes") {
            let mut problems = Vec::new();
            let entries = types::entries(av, ak.pos, "attributes", &mut problems).to_vec();
            self.problems(problems);
            for (k, v) in &entries {
                match flat.attributes.get(k.name.as_str()) {
                    None => {
                        self.sink.error(
                            self.display,
                            k.pos,
                            "tosca.unknown-attribute",
                            format!("`{}` is not an attribute of {owner}", k.name),
                        );
                    }
                    Some(fp) => {
                        if let Some(schema) = &fp.def.schema {
                            let v = self.resolve_inputs(v);
                            let what = format!("attribute `{}` of {owner}", k.name);
                            self.checker().check(
                                &v,
                                schema,
                                fp.file,
                                At {
                                    file: display,
                                    what: &what,
                                },
                            );
                        }
                    }
                }
            }
        }

        // Capabilities.
        if let Some((ck, cv)) = node.get_entry("capabilities") {
            let mut problems = Vec::new();
            let entries = types::entries(cv, ck.pos, "capabilities", &mut problems);
            self.problems(problems);
            for (k, v) in entries {
                let Some((capdef, capfile)) = flat.capabilities.get(k.name.as_str()) else {
                    let mut known: Vec<&str> =
                        flat.capabilities.keys().map(String::as_str).collect();
                    known.sort_unstable();
                    self.sink
                        .error(
                            self.display,
                            k.pos,
                            "tosca.unknown-capability",
                            format!("`{}` is not a capability of {owner}", k.name),
                        )
                        .help = Some(format!("known capabilities: {}", known.join(", ")));
                    continue;
                };
                let props = self.types.capability_properties(capdef, *capfile);
                let mut problems = Vec::new();
                let mut values = IndexMap::new();
                for (ak, av) in types::entries(v, k.pos, &k.name, &mut problems) {
                    match ak.name.as_str() {
                        "properties" => {
                            let pe = types::entries(av, ak.pos, "properties", &mut problems);
                            let resolved = self.resolve_entries(pe);
                            let what = format!("capability `{}` of {owner}", k.name);
                            self.checker()
                                .check_properties(&resolved, &props, k.pos, &what, display);
                            values = with_defaults(&resolved, &props);
                        }
                        "attributes" | "occurrences" => {}
                        other => problems.push(Problem::error(
                            "tosca.unknown-keyword",
                            ak.pos,
                            format!("`{other}` is not a keyword of a capability assignment"),
                        )),
                    }
                }
                self.problems(problems);
                t.capabilities.insert(k.name.as_str().to_owned(), values);
            }
        }

        // Requirements (targets are checked once every template is known).
        if let Some((_, rv)) = node.get_entry("requirements") {
            t.requirements = self.requirement_assignments(rv, &flat.requirements, &owner);
        }

        // Artifacts: the type's, overridden by the template's.
        let mut problems = Vec::new();
        let mut artifacts: IndexMap<String, ArtifactDef> = flat
            .artifacts
            .iter()
            .map(|(n, (a, _))| (n.clone(), (**a).clone()))
            .collect();
        if let Some((ak, av)) = node.get_entry("artifacts") {
            for mut a in types::artifact_defs(av, ak.pos, &mut problems) {
                if a.ty.is_none() {
                    a.ty = artifacts.get(&a.name).and_then(|p| p.ty.clone());
                }
                artifacts.insert(a.name.clone(), a);
            }
        }
        self.problems(problems);
        t.artifacts = artifacts
            .into_values()
            .filter_map(|a| self.resolve_artifact(a, &owner))
            .collect();

        // Interfaces.
        if let Some((ik, iv)) = node.get_entry("interfaces") {
            let mut problems = Vec::new();
            let ifaces = types::iface_defs(iv, ik.pos, &mut problems);
            self.problems(problems);
            for iface in ifaces {
                self.interface(&mut t, &flat.interfaces, &iface, &owner);
            }
        }
        // Operations implemented by the type itself and not re-assigned.
        for (iname, fi) in &flat.interfaces {
            for (oname, (op, _)) in &fi.operations {
                if op.implementation.is_some()
                    && !t
                        .operations
                        .iter()
                        .any(|o| o.interface == *iname && o.op.name == *oname)
                {
                    let interface_type = fi
                        .ty
                        .as_ref()
                        .and_then(|(n, f)| self.types.lookup(&n.name, Kind::Interface, *f));
                    t.operations.push(Operation {
                        interface: iname.clone(),
                        interface_type,
                        op: op.clone(),
                    });
                }
            }
        }
        t
    }

    fn requirement_assignments(
        &mut self,
        node: &Node,
        defs: &IndexMap<String, (std::sync::Arc<crate::types::ReqDef>, usize)>,
        owner: &str,
    ) -> Vec<ReqAssign> {
        let Some(items) = node.as_seq() else {
            if !node.is_null() {
                self.problems(vec![types::wrong_shape(
                    node,
                    "`requirements`",
                    "a list of single-entry maps",
                )]);
            }
            return Vec::new();
        };
        let mut out = Vec::new();
        for item in items {
            let Some([(k, v)]) = item.as_map() else {
                self.problems(vec![types::wrong_shape(
                    item,
                    "a requirement assignment",
                    "a single-entry map",
                )]);
                continue;
            };
            if !defs.contains_key(k.name.as_str()) {
                let mut known: Vec<&str> = defs.keys().map(String::as_str).collect();
                known.sort_unstable();
                self.sink
                    .error(
                        self.display,
                        k.pos,
                        "tosca.unknown-requirement",
                        format!("`{}` is not a requirement of {owner}", k.name),
                    )
                    .help = Some(format!("known requirements: {}", known.join(", ")));
                continue;
            }
            let mut problems = Vec::new();
            let target = match &v.value {
                Value::Str(_) => types::named(v, "node", &mut problems),
                Value::Map(map) => {
                    for (rk, _) in map {
                        if !matches!(
                            rk.name.as_str(),
                            "node"
                                | "capability"
                                | "relationship"
                                | "node_filter"
                                | "occurrences"
                                | "description"
                                | "metadata"
                        ) {
                            problems.push(Problem::error(
                                "tosca.unknown-keyword",
                                rk.pos,
                                format!(
                                    "`{}` is not a keyword of a requirement assignment",
                                    rk.name
                                ),
                            ));
                        }
                    }
                    v.get("node")
                        .and_then(|n| types::named(n, "node", &mut problems))
                }
                Value::Null => None,
                _ => {
                    problems.push(types::wrong_shape(
                        v,
                        "a requirement assignment",
                        "a node template name or a map",
                    ));
                    None
                }
            };
            self.problems(problems);
            out.push(ReqAssign {
                name: k.name.as_str().to_owned(),
                target,
            });
        }
        out
    }

    pub(super) fn check_requirements(&mut self, topo: &Topology, i: usize) {
        let t = &topo.nodes[i];
        let Some(ty) = t.ty else {
            return;
        };
        let flat = self.types.flat(ty);
        let owner = format!("node template `{}`", t.name);
        for r in &t.requirements {
            let Some(target) = &r.target else {
                continue;
            };
            let Some(tt) = topo.node(&target.name) else {
                self.unknown_node_template(
                    target,
                    &format!("requirement `{}` of {owner}", r.name),
                    topo,
                );
                continue;
            };
            let (Some((def, def_file)), Some(target_ty)) = (flat.requirements.get(&r.name), tt.ty)
            else {
                continue;
            };
            if let Some(n) = &def.node
                && let Some(want) = self.types.lookup(&n.name, Kind::Node, *def_file)
                && !self.types.derives_from(target_ty, want)
            {
                self.sink.error(
                    self.display,
                    target.pos,
                    "tosca.requirement-target-mismatch",
                    format!(
                        "requirement `{}` of {owner} needs a `{}` node, but `{}` is a `{}`",
                        r.name, n.name, target.name, tt.type_name
                    ),
                );
                continue;
            }
            if let Some(c) = &def.capability
                && let Some(want) = self.types.lookup(&c.name, Kind::Capability, *def_file)
            {
                let tflat = self.types.flat(target_ty);
                let offers = tflat.capabilities.values().any(|(cap, f)| {
                    cap.ty
                        .as_ref()
                        .and_then(|n| self.types.lookup(&n.name, Kind::Capability, *f))
                        .is_some_and(|id| self.types.derives_from(id, want))
                });
                if !offers {
                    self.sink.error(
                            self.display,
                            target.pos,
                            "tosca.requirement-target-mismatch",
                            format!(
                                "requirement `{}` of {owner} needs a `{}` capability, which `{}` (a `{}`) does not offer",
                                r.name, c.name, target.name, tt.type_name
                            ),
                        );
                }
            }
        }
        // Occurrences.
        let is_vnf = self.types.derives_from_name(ty, VNF_TYPE);
        for (name, (def, _)) in &flat.requirements {
            let count = t.requirements.iter().filter(|r| r.name == *name).count() as u64;
            let occ = def.occurrences();
            if occ.max.is_some_and(|m| count > m) {
                self.sink.error(
                    self.display,
                    t.pos,
                    "tosca.requirement-occurrences",
                    format!(
                        "{owner} assigns requirement `{name}` {count} times; at most {} allowed",
                        occ.max.unwrap_or_default()
                    ),
                );
            } else if count < occ.min && is_vnf && name != "dependency" {
                self.sink.quirk(
                    Quirk::VnfRequirementLowerBound,
                    self.display,
                    t.pos,
                    format!(
                        "{owner} assigns requirement `{name}` {count} times, fewer than its lower bound {}",
                        occ.min
                    ),
                );
            }
        }
    }

    pub(super) fn unknown_node_template(&mut self, name: &Named, what: &str, topo: &Topology) {
        let mut known: Vec<&str> = topo.nodes.iter().map(|n| n.name.as_str()).collect();
        known.sort_unstable();
        self.sink
            .error(
                self.display,
                name.pos,
                "tosca.unknown-node-template",
                format!(
                    "{what} names `{}`, which is not a node template of this file",
                    name.name
                ),
            )
            .help = Some(if known.is_empty() {
            "this topology has no node templates".to_string()
        } else {
            format!("node templates of this file: {}", known.join(", "))
        });
    }
}
