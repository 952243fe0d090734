//! Artifacts resolved against the package, and interfaces with their operations.

use super::*;

impl<'g> Builder<'_, 'g> {
    pub(super) fn resolve_artifact(
        &mut self,
        a: ArtifactDef,
        owner: &str,
    ) -> Option<ResolvedArtifact> {
        let type_name = match &a.ty {
            None => {
                // TOSCA lets the file extension name the type.
                let ext = a
                    .file
                    .as_ref()
                    .and_then(|f| f.name.rsplit_once('.'))
                    .map(|(_, e)| e.to_ascii_lowercase());
                let by_ext = ext.and_then(|ext| {
                    self.types.entries.iter().enumerate().find(|(id, e)| {
                        e.def.kind == Kind::Artifact
                            && self
                                .types
                                .flat(*id)
                                .file_ext
                                .iter()
                                .any(|x| x.eq_ignore_ascii_case(&ext))
                    })
                });
                match by_ext {
                    Some((_, e)) => e.def.name.to_string(),
                    None => {
                        let guess = if a.name == "sw_image"
                            && self
                                .types
                                .lookup(SW_IMAGE, Kind::Artifact, self.file)
                                .is_some()
                        {
                            SW_IMAGE
                        } else {
                            "tosca.artifacts.File"
                        };
                        self.sink.quirk(
                            Quirk::UntypedArtifact,
                            self.display,
                            a.pos,
                            format!("artifact `{}` of {owner} has no `type`, and its file extension names none; read as `{guess}`", a.name),
                        );
                        guess.to_string()
                    }
                }
            }
            Some(t) => {
                if self
                    .types
                    .lookup(&t.name, Kind::Artifact, self.file)
                    .is_none()
                    && t.name.starts_with("tosca.artifacts.Implementation.")
                {
                    self.sink.quirk(
                        Quirk::UndefinedImplementationArtifactType,
                        self.display,
                        t.pos,
                        format!(
                            "artifact type `{}` of artifact `{}` is not defined",
                            t.name, a.name
                        ),
                    );
                } else {
                    self.types
                        .resolve(t, Kind::Artifact, self.file, self.sink)?;
                }
                t.name.clone()
            }
        };
        if let Some(id) = self.types.lookup(&type_name, Kind::Artifact, self.file) {
            let props = self.types.flat(id).properties.clone();
            let resolved = self.resolve_entries(&a.properties);
            let what = format!("artifact `{}` of {owner}", a.name);
            let display = self.display;
            self.checker()
                .check_properties(&resolved, &props, a.pos, &what, display);
        }
        let file = a.file.clone()?;
        let mut reference = file.name.clone();
        if let Some(repo) = &a.repository {
            let unit = &self.types.graph.files[self.file].unit;
            match unit.repositories.iter().find(|(n, _)| *n == repo.name) {
                Some((_, url)) => {
                    reference = format!(
                        "{}/{}",
                        url.name.trim_end_matches('/'),
                        reference.trim_start_matches('/')
                    );
                }
                None => {
                    self.sink.error(
                        self.display,
                        repo.pos,
                        "tosca.unknown-repository",
                        format!(
                            "repository `{}` of artifact `{}` is not defined in this file",
                            repo.name, a.name
                        ),
                    );
                    return None;
                }
            }
        }
        if paths::is_external_uri(&reference) {
            return Some(ResolvedArtifact {
                def: a,
                type_name,
                file: reference,
                external: true,
                present: false,
            });
        }
        let base = self.types.graph.files[self.file]
            .package_path
            .clone()
            .unwrap_or_default();
        let resolved = match paths::resolve_relative(&base, &reference) {
            Ok(p) => p,
            Err(paths::PathError::Escapes) => {
                self.sink.error(
                    self.display,
                    file.pos,
                    "tosca.artifact-escapes-package",
                    format!(
                        "artifact `{}` of {owner} points outside the package: `{reference}`",
                        a.name
                    ),
                );
                return None;
            }
            Err(paths::PathError::Invalid(why)) => {
                self.sink.error(
                    self.display,
                    file.pos,
                    "tosca.invalid-artifact-path",
                    format!("artifact `{}` of {owner}: `{reference}` is not a valid package path: {why}", a.name),
                );
                return None;
            }
        };
        let mut path = resolved;
        let mut present = self.files.contains(&path);
        if !present
            && let Ok(from_root) = paths::resolve_relative("", &format!("/{reference}"))
            && from_root != path
            && self.files.contains(&from_root)
        {
            self.sink.quirk(
                        Quirk::ArtifactPathFromPackageRoot,
                        self.display,
                        file.pos,
                        format!(
                            "artifact `{}` of {owner}: `{reference}` is not at `{path}` but is at `{from_root}` (relative to the package root)",
                            a.name
                        ),
                    );
            path = from_root;
            present = true;
        }
        if !present {
            self.sink.warning(
                self.display,
                file.pos,
                "tosca.artifact-file-missing",
                format!("the file of artifact `{}` of {owner}, `{path}`, is not in the package", a.name),
            ).help = Some("the descriptor is valid, but operations that need the file will fail until it is added".into());
        }
        Some(ResolvedArtifact {
            def: a,
            type_name,
            file: path,
            external: false,
            present,
        })
    }

    pub(super) fn interface(
        &mut self,
        t: &mut NodeTemplate,
        defs: &IndexMap<String, crate::hierarchy::FlatIface>,
        iface: &IfaceDef,
        owner: &str,
    ) {
        let Some(def) = defs.get(&iface.name) else {
            let mut known: Vec<&str> = defs.keys().map(String::as_str).collect();
            known.sort_unstable();
            self.sink
                .error(
                    self.display,
                    iface.pos,
                    "tosca.unknown-interface",
                    format!("`{}` is not an interface of {owner}", iface.name),
                )
                .help = Some(format!("known interfaces: {}", known.join(", ")));
            return;
        };
        if let Some(ty) = &iface.ty {
            self.sink.error(
                self.display,
                ty.pos,
                "tosca.unknown-keyword",
                "an interface assignment in a node template cannot set `type`",
            );
        }
        let iface_type = def
            .ty
            .as_ref()
            .and_then(|(n, f)| self.types.lookup(&n.name, Kind::Interface, *f));
        let type_ops = iface_type.map(|id| self.types.flat(id));
        let is_vnflcm = iface_type.is_some_and(|id| self.types.derives_from_name(id, VNFLCM_TYPE));
        // One warning per interface, not per operation: Tacker writes `[]` for every operation.
        let empty: Vec<&str> = iface
            .operations
            .iter()
            .filter(|op| op.empty_list)
            .map(|op| op.name.as_str())
            .collect();
        if let Some(first) = iface.operations.iter().find(|op| op.empty_list) {
            let list = empty
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ");
            let (subject, verb) = if empty.len() == 1 {
                ("operation", "is")
            } else {
                ("operations", "are")
            };
            self.sink.quirk(
                Quirk::EmptyListOperation,
                self.display,
                first.pos,
                format!(
                    "{subject} {list} of interface `{}` of {owner} {verb} `[]`",
                    iface.name
                ),
            );
        }
        for op in &iface.operations {
            let declared = def.operations.contains_key(&op.name)
                || type_ops
                    .as_ref()
                    .is_some_and(|f| f.operations.contains_key(&op.name));
            if !declared {
                let mut known: Vec<&str> = type_ops
                    .as_ref()
                    .map(|f| f.operations.keys().map(String::as_str).collect())
                    .unwrap_or_default();
                known.extend(def.operations.keys().map(String::as_str));
                known.sort_unstable();
                known.dedup();
                self.sink
                    .error(
                        self.display,
                        op.pos,
                        "tosca.unknown-operation",
                        format!(
                            "`{}` is not an operation of interface `{}` of {owner}",
                            op.name, iface.name
                        ),
                    )
                    .help = Some(if is_vnflcm {
                    format!(
                        "declare it in an interface type derived from {VNFLCM_TYPE}; known operations: {}",
                        known.join(", ")
                    )
                } else {
                    format!("known operations: {}", known.join(", "))
                });
                continue;
            }
            let mut op = op.clone();
            if op.implementation.is_none() {
                // Keep an implementation given by the type.
                op.implementation = def
                    .operations
                    .get(&op.name)
                    .and_then(|(o, _)| o.implementation.clone());
            }
            if let Some(imp) = &op.implementation {
                let refs = imp.primary.iter().chain(&imp.dependencies);
                for r in refs {
                    let declared = t.artifacts.iter().any(|a| a.def.name == r.name);
                    let is_file = !is_vnflcm
                        && paths::resolve_relative(
                            self.types.graph.files[self.file]
                                .package_path
                                .as_deref()
                                .unwrap_or_default(),
                            &r.name,
                        )
                        .is_ok_and(|p| self.files.contains(&p));
                    if !declared && !is_file {
                        let mut known: Vec<&str> =
                            t.artifacts.iter().map(|a| a.def.name.as_str()).collect();
                        known.sort_unstable();
                        self.sink.error(
                            self.display,
                            r.pos,
                            "tosca.unknown-artifact",
                            format!(
                                "operation `{}` of {owner} is implemented by `{}`, which is not an artifact of the node template",
                                op.name, r.name
                            ),
                        ).help = Some(if known.is_empty() {
                            "declare the artifact under the node template's `artifacts`".to_string()
                        } else {
                            format!("declared artifacts: {}", known.join(", "))
                        });
                    }
                }
            }
            op.inputs = self.resolve_entries(&op.inputs);
            t.operations.push(Operation {
                interface: iface.name.clone(),
                interface_type: iface_type,
                op,
            });
        }
    }
}
