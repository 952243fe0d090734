//! Groups, policies and `substitution_mappings`.

use super::*;

impl<'g> Builder<'_, 'g> {
    pub(super) fn groups(&mut self, topo: &'g Node, topology: &Topology) -> Vec<Group> {
        let Some((gk, gv)) = topo.get_entry("groups") else {
            return Vec::new();
        };
        let mut problems = Vec::new();
        let entries = types::entries(gv, gk.pos, "groups", &mut problems);
        self.problems(problems);
        let mut out = Vec::new();
        for (k, v) in entries {
            let mut g = Group {
                name: k.name.as_str().to_owned(),
                ty: None,
                members: Vec::new(),
                properties: IndexMap::new(),
            };
            let mut problems = Vec::new();
            let mut type_name = None;
            let mut props: &[(Key, Node)] = &[];
            for (gk2, gv2) in types::entries(v, k.pos, &k.name, &mut problems) {
                match gk2.name.as_str() {
                    "type" => type_name = types::named(gv2, "type", &mut problems),
                    "members" => g.members = types::named_list(gv2, "members", &mut problems),
                    "properties" => {
                        props = types::entries(gv2, gk2.pos, "properties", &mut problems)
                    }
                    "description" | "metadata" | "interfaces" | "attributes" => {}
                    other => problems.push(Problem::error(
                        "tosca.unknown-keyword",
                        gk2.pos,
                        format!("`{other}` is not a keyword of a group"),
                    )),
                }
            }
            self.problems(problems);
            let owner = format!("group `{}`", k.name);
            match type_name {
                None => {
                    self.sink.error(
                        self.display,
                        k.pos,
                        "tosca.missing-keyword",
                        format!("{owner} has no `type`"),
                    );
                }
                Some(tn) => g.ty = self.types.resolve(&tn, Kind::Group, self.file, self.sink),
            }
            let flat = g.ty.map(|id| self.types.flat(id));
            let resolved = self.resolve_entries(props);
            if let (Some(flat), Some(ty)) = (&flat, g.ty) {
                let display = self.display;
                let tolerated = self.types.derives_from_name(ty, PLACEMENT_GROUP)
                    && !resolved
                        .iter()
                        .any(|(k, v)| k.name == "description" && !v.is_null());
                if tolerated {
                    self.sink.quirk(
                        Quirk::PlacementGroupWithoutDescription,
                        display,
                        k.pos,
                        format!("{owner} has no `description`, which {PLACEMENT_GROUP} requires"),
                    );
                    let mut relaxed = flat.properties.clone();
                    relaxed.shift_remove("description");
                    self.checker()
                        .check_properties(&resolved, &relaxed, k.pos, &owner, display);
                } else {
                    self.checker().check_properties(
                        &resolved,
                        &flat.properties,
                        k.pos,
                        &owner,
                        display,
                    );
                }
                g.properties = with_defaults(&resolved, &flat.properties);
            }
            for m in &g.members {
                match topology.node(&m.name) {
                    None => {
                        self.unknown_node_template(m, &format!("member list of {owner}"), topology)
                    }
                    Some(n) => {
                        if let (Some(flat), Some(nt)) = (&flat, n.ty) {
                            self.check_valid_type(nt, &flat.valid_types, m, &owner, "member");
                        }
                    }
                }
            }
            out.push(g);
        }
        out
    }

    fn check_valid_type(
        &mut self,
        id: TypeId,
        valid: &[(Named, usize)],
        name: &Named,
        owner: &str,
        role: &str,
    ) {
        if valid.is_empty() {
            return;
        }
        let ok = valid.iter().any(|(v, f)| {
            let want = self
                .types
                .lookup(&v.name, Kind::Node, *f)
                .or_else(|| self.types.lookup(&v.name, Kind::Group, *f));
            want.is_some_and(|w| self.types.derives_from(id, w))
        });
        if !ok {
            let names: Vec<&str> = valid.iter().map(|(v, _)| v.name.as_str()).collect();
            self.sink.error(
                self.display,
                name.pos,
                "tosca.invalid-target",
                format!(
                    "`{}` (a `{}`) cannot be a {role} of {owner}; valid types: {}",
                    name.name,
                    self.types.entries[id].def.name,
                    names.join(", ")
                ),
            );
        }
    }

    pub(super) fn policies(&mut self, topo: &'g Node, topology: &Topology) -> Vec<Policy> {
        let Some((pk, pv)) = topo.get_entry("policies") else {
            return Vec::new();
        };
        let mut items: Vec<(&Key, &Node)> = Vec::new();
        match &pv.value {
            Value::Seq(seq) => {
                for item in seq {
                    match item.as_map() {
                        Some([(k, v)]) => items.push((k, v)),
                        _ => self.problems(vec![types::wrong_shape(
                            item,
                            "a policy",
                            "a single-entry map",
                        )]),
                    }
                }
            }
            Value::Map(map) => {
                self.sink.quirk(
                    Quirk::PoliciesAsMap,
                    self.display,
                    pk.pos,
                    "`policies` is a map",
                );
                items.extend(map.iter().map(|(k, v)| (k, v)));
            }
            Value::Null => {}
            _ => self.problems(vec![types::wrong_shape(
                pv,
                "`policies`",
                "a list of single-entry maps",
            )]),
        }
        let mut out = Vec::new();
        for (k, v) in items {
            let mut p = Policy {
                name: k.name.as_str().to_owned(),
                pos: k.pos,
                type_name: String::new(),
                ty: None,
                targets: Vec::new(),
                properties: IndexMap::new(),
                metadata: IndexMap::new(),
            };
            let mut problems = Vec::new();
            let mut type_name = None;
            let mut props: &[(Key, Node)] = &[];
            for (k2, v2) in types::entries(v, k.pos, &k.name, &mut problems) {
                match k2.name.as_str() {
                    "type" => type_name = types::named(v2, "type", &mut problems),
                    "targets" => p.targets = types::named_list(v2, "targets", &mut problems),
                    "properties" => props = types::entries(v2, k2.pos, "properties", &mut problems),
                    "metadata" => {
                        p.metadata = types::entries(v2, k2.pos, "metadata", &mut problems)
                            .iter()
                            .map(|(k, v)| (k.name.as_str().to_owned(), v.clone()))
                            .collect();
                    }
                    "description" | "triggers" => {}
                    other => problems.push(Problem::error(
                        "tosca.unknown-keyword",
                        k2.pos,
                        format!("`{other}` is not a keyword of a policy"),
                    )),
                }
            }
            self.problems(problems);
            let owner = format!("policy `{}`", k.name);
            match type_name {
                None => {
                    self.sink.error(
                        self.display,
                        k.pos,
                        "tosca.missing-keyword",
                        format!("{owner} has no `type`"),
                    );
                }
                Some(tn) => {
                    p.type_name = tn.name.clone();
                    p.ty = self.types.resolve(&tn, Kind::Policy, self.file, self.sink);
                }
            }
            let flat = p.ty.map(|id| self.types.flat(id));
            let resolved = self.resolve_entries(props);
            if let Some(flat) = &flat {
                let display = self.display;
                self.checker().check_properties(
                    &resolved,
                    &flat.properties,
                    k.pos,
                    &owner,
                    display,
                );
                p.properties = with_defaults(&resolved, &flat.properties);
            }
            for target in &p.targets {
                let ty = match (
                    topology.node(&target.name),
                    topology.groups.iter().find(|g| g.name == target.name),
                ) {
                    (Some(n), _) => n.ty,
                    (None, Some(g)) => g.ty,
                    (None, None) => {
                        self.unknown_node_template(
                            target,
                            &format!("target list of {owner}"),
                            topology,
                        );
                        continue;
                    }
                };
                if let (Some(flat), Some(ty)) = (&flat, ty) {
                    self.check_valid_type(ty, &flat.valid_types, target, &owner, "target");
                }
            }
            out.push(p);
        }
        out
    }

    pub(super) fn check_substitution(&mut self, topology: &Topology) {
        let Some(sub) = &topology.substitution else {
            return;
        };
        let Some(nt) = sub.node_type else {
            return;
        };
        let flat = self.types.flat(nt);
        let owner = format!(
            "substitution mapping of node type `{}`",
            sub.node_type_name.name
        );
        let given: Vec<(Key, Node)> = sub
            .properties
            .iter()
            .map(|(k, v)| {
                (
                    Key {
                        name: k.as_str().into(),
                        pos: v.pos,
                    },
                    v.clone(),
                )
            })
            .collect();
        for (k, v) in &given {
            match flat.properties.get(k.name.as_str()) {
                None => {
                    self.sink.error(
                        self.display,
                        k.pos,
                        "tosca.unknown-property",
                        format!(
                            "`{}` is not a property of node type `{}`",
                            k.name, sub.node_type_name.name
                        ),
                    );
                }
                Some(fp) => {
                    if let Some(schema) = &fp.def.schema {
                        let what = format!("property `{}` of the {owner}", k.name);
                        let display = self.display;
                        self.checker().check_vnf_property(
                            &k.name,
                            v,
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
        for r in &sub.requirements {
            if !flat.requirements.contains_key(&r.name) {
                self.sink.quirk(
                    Quirk::UndeclaredSubstitutionRequirement,
                    self.display,
                    r.pos,
                    format!(
                        "`{}` is not a requirement of node type `{}`",
                        r.name, sub.node_type_name.name
                    ),
                );
            }
            let Some((node, req)) = &r.target else {
                continue;
            };
            match topology.node(&node.name) {
                None => self.sink.quirk(
                    Quirk::DanglingSubstitutionRequirement,
                    self.display,
                    node.pos,
                    format!("requirement mapping `{}` names `{}`, which is not a node template of this file", r.name, node.name),
                ),
                Some(n) => {
                    if let Some(ty) = n.ty
                        && !self.types.flat(ty).requirements.contains_key(&req.name) {
                            self.sink.quirk(
                                Quirk::SubstitutionTargetRequirementUndeclared,
                                self.display,
                                req.pos,
                                format!(
                                    "requirement mapping `{}` names `{}` of node template `{}`, which its type `{}` does not declare",
                                    r.name, req.name, node.name, self.types.entries[ty].def.name
                                ),
                            );
                        }
                }
            }
        }
    }
}
