//! Requirement, capability, interface, operation and artifact definitions.

use super::*;

pub(super) fn req_defs(node: &Node, problems: &mut Vec<Problem>) -> Vec<Arc<ReqDef>> {
    let Some(items) = node.as_seq() else {
        if !node.is_null() {
            problems.push(wrong_shape(
                node,
                "`requirements`",
                "a list of single-entry maps",
            ));
        }
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let Some([(k, v)]) = item.as_map() else {
            problems.push(wrong_shape(
                item,
                "a requirement definition",
                "a single-entry map",
            ));
            continue;
        };
        let mut r = ReqDef {
            name: k.name.as_str().to_owned(),
            pos: k.pos,
            capability: None,
            node: None,
            relationship: None,
            occurrences: None,
        };
        match &v.value {
            Value::Str(_) => r.capability = named(v, "capability", problems),
            Value::Map(map) => {
                for (rk, rv) in map {
                    match rk.name.as_str() {
                        "capability" => r.capability = named(rv, "capability", problems),
                        "node" => r.node = named(rv, "node", problems),
                        "relationship" => {
                            r.relationship = match rv.get("type") {
                                Some(t) => named(t, "relationship type", problems),
                                None => named(rv, "relationship", problems),
                            }
                        }
                        "occurrences" => r.occurrences = occurrences(rv, problems),
                        "description" | "node_filter" | "metadata" => {}
                        other => problems.push(Problem::error(
                            "tosca.unknown-keyword",
                            rk.pos,
                            format!("`{other}` is not a keyword of a requirement definition"),
                        )),
                    }
                }
            }
            _ => problems.push(wrong_shape(
                v,
                "a requirement definition",
                "a capability type name or a map",
            )),
        }
        out.push(Arc::new(r));
    }
    out
}

pub(super) fn cap_defs(node: &Node, at: Pos, problems: &mut Vec<Problem>) -> Vec<Arc<CapDef>> {
    let mut out = Vec::new();
    for (k, v) in entries(node, at, "capabilities", problems) {
        let mut c = CapDef {
            name: k.name.as_str().to_owned(),
            pos: k.pos,
            ty: None,
            properties: Vec::new(),
            valid_source_types: Vec::new(),
        };
        match &v.value {
            Value::Str(_) => c.ty = named(v, "type", problems),
            Value::Map(map) => {
                for (ck, cv) in map {
                    match ck.name.as_str() {
                        "type" => c.ty = named(cv, "type", problems),
                        "properties" => {
                            c.properties = prop_defs(cv, ck.pos, "properties", problems)
                        }
                        "valid_source_types" => {
                            c.valid_source_types = named_list(cv, "valid_source_types", problems)
                        }
                        "occurrences" => {
                            occurrences(cv, problems);
                        }
                        "description" | "attributes" | "metadata" => {}
                        other => problems.push(Problem::error(
                            "tosca.unknown-keyword",
                            ck.pos,
                            format!("`{other}` is not a keyword of a capability definition"),
                        )),
                    }
                }
            }
            _ => problems.push(wrong_shape(
                v,
                "a capability definition",
                "a type name or a map",
            )),
        }
        out.push(Arc::new(c));
    }
    out
}

/// Reads interface definitions or assignments (`interfaces:` of a type or a template).
pub(crate) fn iface_defs(node: &Node, at: Pos, problems: &mut Vec<Problem>) -> Vec<Arc<IfaceDef>> {
    let mut out = Vec::new();
    for (k, v) in entries(node, at, "interfaces", problems) {
        let mut i = IfaceDef {
            name: k.name.as_str().to_owned(),
            pos: k.pos,
            ty: None,
            operations: Vec::new(),
        };
        for (ik, iv) in entries(v, k.pos, &k.name, problems) {
            match ik.name.as_str() {
                "type" => i.ty = named(iv, "type", problems),
                "inputs" | "description" | "notifications" | "metadata" => {}
                "operations" => {
                    for (ok, ov) in entries(iv, ik.pos, "operations", problems) {
                        i.operations.push(op_def(ok, ov, problems));
                    }
                }
                _ => i.operations.push(op_def(ik, iv, problems)),
            }
        }
        out.push(Arc::new(i));
    }
    out
}

/// Reads an operation definition or assignment.
pub(crate) fn op_def(key: &Key, node: &Node, problems: &mut Vec<Problem>) -> OpDef {
    let mut op = OpDef {
        name: key.name.as_str().to_owned(),
        pos: key.pos,
        implementation: None,
        inputs: Vec::new(),
        empty_list: false,
    };
    match &node.value {
        Value::Null => {}
        Value::Str(_) => op.implementation = implementation(node, problems),
        Value::Seq(items) if items.is_empty() => op.empty_list = true,
        Value::Map(map) => {
            for (k, v) in map {
                match k.name.as_str() {
                    "implementation" => op.implementation = implementation(v, problems),
                    "inputs" => {
                        op.inputs = v.as_map().map(<[_]>::to_vec).unwrap_or_default();
                        if !v.is_null() && v.as_map().is_none() {
                            problems.push(wrong_shape(v, "`inputs`", "a map"));
                        }
                    }
                    "description" | "outputs" | "metadata" => {}
                    other => problems.push(Problem::error(
                        "tosca.unknown-keyword",
                        k.pos,
                        format!("`{other}` is not a keyword of operation `{}`", key.name),
                    )),
                }
            }
        }
        _ => problems.push(wrong_shape(
            node,
            &format!("operation `{}`", key.name),
            "a map or an implementation artifact name",
        )),
    }
    op
}

fn implementation(node: &Node, problems: &mut Vec<Problem>) -> Option<Implementation> {
    let mut imp = Implementation {
        pos: node.pos,
        primary: None,
        dependencies: Vec::new(),
        timeout: None,
    };
    match &node.value {
        Value::Str(s) => {
            imp.primary = Some(Named {
                name: s.as_str().to_owned(),
                pos: node.pos,
            })
        }
        Value::Map(map) => {
            for (k, v) in map {
                match k.name.as_str() {
                    "primary" => imp.primary = artifact_ref(v, problems),
                    "dependencies" => {
                        let items = match &v.value {
                            Value::Seq(items) => items.as_slice(),
                            Value::Null => &[],
                            _ => std::slice::from_ref(v),
                        };
                        imp.dependencies = items
                            .iter()
                            .filter_map(|i| artifact_ref(i, problems))
                            .collect();
                    }
                    "timeout" => match v.value {
                        Value::Int(t) if t >= 0 => imp.timeout = Some((t, v.pos)),
                        _ => problems.push(wrong_shape(
                            v,
                            "`timeout`",
                            "a non-negative integer (seconds)",
                        )),
                    },
                    "operation_host" | "description" => {}
                    other => problems.push(Problem::error(
                        "tosca.unknown-keyword",
                        k.pos,
                        format!("`{other}` is not a keyword of an operation implementation"),
                    )),
                }
            }
        }
        Value::Null => return None,
        _ => {
            problems.push(wrong_shape(
                node,
                "`implementation`",
                "an artifact name or a map",
            ));
            return None;
        }
    }
    Some(imp)
}

/// An artifact named by an implementation: its name, or (TOSCA 1.3 inline definition) its file.
fn artifact_ref(node: &Node, problems: &mut Vec<Problem>) -> Option<Named> {
    match &node.value {
        Value::Map(_) => match node.get("file") {
            Some(f) => named(f, "file", problems),
            None => {
                problems.push(Problem::error(
                    "tosca.missing-keyword",
                    node.pos,
                    "an inline artifact definition needs a `file`",
                ));
                None
            }
        },
        _ => named(node, "artifact", problems),
    }
}

/// Reads artifact definitions (`artifacts:` of a node type or template).
pub(crate) fn artifact_defs(node: &Node, at: Pos, problems: &mut Vec<Problem>) -> Vec<ArtifactDef> {
    let mut out = Vec::new();
    for (k, v) in entries(node, at, "artifacts", problems) {
        let mut a = ArtifactDef {
            name: k.name.as_str().to_owned(),
            pos: k.pos,
            ty: None,
            file: None,
            repository: None,
            description: None,
            deploy_path: None,
            checksum: None,
            checksum_algorithm: None,
            properties: Vec::new(),
        };
        match &v.value {
            Value::Str(_) => a.file = named(v, "file", problems),
            Value::Map(map) => {
                for (ak, av) in map {
                    match ak.name.as_str() {
                        "type" => a.ty = named(av, "type", problems),
                        "file" => a.file = named(av, "file", problems),
                        "repository" => a.repository = named(av, "repository", problems),
                        "description" => a.description = text(av),
                        "deploy_path" => a.deploy_path = text(av),
                        "checksum" => a.checksum = text(av),
                        "checksum_algorithm" => a.checksum_algorithm = text(av),
                        "properties" => {
                            a.properties = av.as_map().map(<[_]>::to_vec).unwrap_or_default();
                            if !av.is_null() && av.as_map().is_none() {
                                problems.push(wrong_shape(av, "`properties`", "a map"));
                            }
                        }
                        "artifact_version" | "metadata" => {}
                        other => problems.push(Problem::error(
                            "tosca.unknown-keyword",
                            ak.pos,
                            format!("`{other}` is not a keyword of artifact `{}`", k.name),
                        )),
                    }
                }
                if a.file.is_none() {
                    problems.push(Problem::error(
                        "tosca.missing-keyword",
                        k.pos,
                        format!("artifact `{}` has no `file`", k.name),
                    ));
                }
            }
            _ => problems.push(wrong_shape(
                v,
                &format!("artifact `{}`", k.name),
                "a file name or a map",
            )),
        }
        out.push(a);
    }
    out
}
