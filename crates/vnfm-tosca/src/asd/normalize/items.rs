//! Deployment items, executable images, extensions and property-name checks.

use super::*;

impl Cx<'_> {
    /// Deployment items given as an artifact of a deployment item type.
    pub(super) fn artifact_item(
        &mut self,
        name: &Key,
        def: &Node,
        ty: &str,
    ) -> Option<(DeploymentItem, Pos)> {
        let (file, file_pos) = match def.get("file") {
            Some(f) => (self.string("file", f), f.pos),
            None => (None, name.pos),
        };
        let Some(file) = file else {
            self.error(
                "asd.missing-property",
                file_pos,
                format!("deployment item artifact `{}` has no `file`", name.name),
            );
            return None;
        };
        let properties = def.get("properties");
        if let Some(p) = properties {
            self.check_names(Kind::Artifact, ty, p);
        }
        let mut p = Props::of(properties);
        let description = def
            .get("description")
            .and_then(|d| self.string("description", d));
        let what = format!("deployment item artifact `{}`", name.name);
        let (id, id_pos) = self.item_id(&mut p, &what, name);
        let item = self.item_common(&mut p, &what, name.pos, Kind::Artifact, ty)?;
        let chart = item.artifact_type == DeploymentArtifactType::HelmChart;
        let (file, external, sha256) = self.item_file(&file, file_pos, &what, chart);
        Some((
            DeploymentItem {
                id,
                artifact_name: name.name.as_str().to_owned(),
                artifact_type: item.artifact_type,
                file,
                external,
                sha256,
                deployment_order: item.order,
                lifecycle_parameters: item.parameters,
                description,
                extensions: item.extensions,
            },
            id_pos,
        ))
    }

    /// Deployment items given as a `deploymentItems` / `deployment_items` list whose entries
    /// name their artifact (`artifactId`): an artifact of the node template, or a package path.
    pub(super) fn listed_items(
        &mut self,
        key: &Key,
        list: &Node,
        artifacts: &[(Key, Node)],
        referenced: &mut BTreeSet<String>,
        items: &mut Vec<DeploymentItem>,
        ids: &mut Vec<(String, Pos, String)>,
    ) {
        let entry_type = if self.dialect == AsdDialect::Oran20 {
            "tosca.datatypes.asd.DeploymentItem"
        } else {
            "tosca.datatypes.asd.deploymentItem"
        };
        for (i, entry) in self.seq(&key.name, list).iter().enumerate() {
            let Some(entry) = self.map(&key.name, entry) else {
                continue;
            };
            let what = format!("deployment item {} of `{}`", i + 1, key.name);
            let mut p = Props::of(Some(entry));
            let owner_key = Key {
                name: format!("{}[{i}]", key.name),
                pos: entry.pos,
            };
            let (id, id_pos) = self.item_id(&mut p, &what, &owner_key);
            let Some((ref_key, ref_node)) = p.take(self, ARTIFACT_REF) else {
                self.error(
                    "asd.missing-property",
                    entry.pos,
                    format!("{what} has no `artifactId` naming its artifact"),
                );
                continue;
            };
            let Some(reference) = self.string(&ref_key.name, ref_node) else {
                continue;
            };
            let Some(common) = self.item_common(&mut p, &what, entry.pos, Kind::Data, entry_type)
            else {
                continue;
            };
            let declared = artifacts.iter().find(|(k, _)| k.name == reference);
            let (artifact_name, file, file_pos, description) = match declared {
                Some((k, def)) => {
                    referenced.insert(k.name.as_str().to_owned());
                    let (file_node, description) = match &def.value {
                        // Short notation: the artifact is its file.
                        Value::Str(_) => (Some(def), None),
                        _ => (
                            def.get("file"),
                            def.get("description")
                                .and_then(|d| self.string("description", d)),
                        ),
                    };
                    let Some(file_node) = file_node else {
                        self.error(
                            "asd.missing-property",
                            k.pos,
                            format!("artifact `{}` has no `file`", k.name),
                        );
                        continue;
                    };
                    let Some(file) = self.string("file", file_node) else {
                        continue;
                    };
                    (k.name.as_str().to_owned(), file, file_node.pos, description)
                }
                None if is_url(&reference) || self.find_file(&reference, false).is_some() => {
                    (reference.clone(), reference.clone(), ref_node.pos, None)
                }
                None => {
                    self.emit(
                        Diagnostic::error(
                            "asd.undeclared-artifact",
                            format!(
                                "{what} refers to artifact `{reference}`, which is neither an artifact of the ASD node template nor a file in the package"
                            ),
                        )
                        .at(self.loc(ref_node.pos))
                        .with_help("declare the artifact under the node template's `artifacts`, or give the package path of its file"),
                    );
                    continue;
                }
            };
            let chart = common.artifact_type == DeploymentArtifactType::HelmChart;
            let (file, external, sha256) = self.item_file(&file, file_pos, &what, chart);
            ids.push((id.clone(), id_pos, artifact_name.clone()));
            items.push(DeploymentItem {
                id,
                artifact_name,
                artifact_type: common.artifact_type,
                file,
                external,
                sha256,
                deployment_order: common.order,
                lifecycle_parameters: common.parameters,
                description,
                extensions: common.extensions,
            });
        }
    }

    /// The item id, with the `itemId` quirk reported; falls back to the owner's name (with an
    /// error) so that the item still appears in its stage.
    fn item_id(&mut self, p: &mut Props<'_>, what: &str, owner: &Key) -> (String, Pos) {
        match p.take(self, ITEM_ID) {
            Some((key, v)) => {
                if key.name == "itemId" {
                    let declared = self.spelling(&["deploymentItemId", "item_id"]);
                    self.emit(
                        Diagnostic::warning(
                            quirks::ITEM_ID_SPELLING,
                            format!(
                                "{what} spells its id property `itemId`; the type declares `{declared}`"
                            ),
                        )
                        .at(self.loc(key.pos))
                        .with_help(format!("rename `itemId` to `{declared}`")),
                    );
                }
                let id = self
                    .string(&key.name, v)
                    .unwrap_or_else(|| owner.name.as_str().to_owned());
                (id, v.pos)
            }
            None => {
                let name = self.spelling(&["deploymentItemId", "item_id"]);
                self.error(
                    "asd.missing-property",
                    owner.pos,
                    format!(
                        "{what} has no `{name}`; its name `{}` is used as id",
                        owner.name
                    ),
                );
                (owner.name.as_str().to_owned(), owner.pos)
            }
        }
    }

    /// Artifact type, order, parameters and extensions, shared by both ways of listing items.
    /// `None` (with an error) when the artifact type is missing or unknown.
    fn item_common(
        &mut self,
        p: &mut Props<'_>,
        what: &str,
        owner_pos: Pos,
        kind: Kind,
        ty: &str,
    ) -> Option<ItemCommon> {
        let artifact_type = match p.take(self, ARTIFACT_TYPE) {
            Some((k, v)) => {
                let text = self.string(&k.name, v);
                match text.as_deref().map(DeploymentArtifactType::parse) {
                    Some(Some(t)) => Some(t),
                    Some(None) => {
                        let allowed: Vec<&str> = DeploymentArtifactType::ALL
                            .iter()
                            .map(|t| t.as_str())
                            .collect();
                        self.error(
                            "asd.unknown-artifact-type",
                            v.pos,
                            format!(
                                "{what} has artifact type \"{}\"; expected one of {}",
                                text.unwrap_or_default(),
                                allowed.join(", ")
                            ),
                        );
                        None
                    }
                    None => None,
                }
            }
            None => {
                let name = self.spelling(ARTIFACT_TYPE);
                self.error(
                    "asd.missing-property",
                    owner_pos,
                    format!("{what} has no `{name}`"),
                );
                None
            }
        };
        let order = match p.take(self, DEPLOYMENT_ORDER) {
            Some((k, v)) => self.deployment_order(&k.name, v, what),
            None => None,
        };
        let parameters = match p.take(self, LIFECYCLE_PARAMETERS) {
            Some((k, v)) => self.strings(&k.name, v, false),
            None => Vec::new(),
        };
        let extensions = self.extensions(p, kind, ty);
        Some(ItemCommon {
            artifact_type: artifact_type?,
            order,
            parameters,
            extensions,
        })
    }

    fn deployment_order(&mut self, what: &str, v: &Node, item: &str) -> Option<u32> {
        if let Value::Int(i) = v.value
            && let Ok(order) = u32::try_from(i)
        {
            return Some(order);
        }
        let shown = match &v.value {
            Value::Str(s) => format!("the string \"{s}\""),
            other => v.scalar_text().map_or_else(
                || other.kind().to_string(),
                |t| format!("{} {t}", other.kind()),
            ),
        };
        self.emit(
            Diagnostic::error(
                "asd.invalid-deployment-order",
                format!("`{what}` of {item} must be a non-negative integer; found {shown}"),
            )
            .at(self.loc(v.pos))
            .with_help("items with a lower order are deployed first; leave it out to let the orchestrator decide"),
        );
        None
    }

    /// Resolves an item's file: its package path, whether it is external, and its digest.
    /// A `chart` item may name a chart directory (one holding a `Chart.yaml`) instead of a
    /// packaged chart; it has no digest. A file absent from the package is an error; the item
    /// keeps the path as written.
    fn item_file(
        &mut self,
        file: &str,
        pos: Pos,
        what: &str,
        chart: bool,
    ) -> (String, bool, Option<String>) {
        if is_url(file) {
            self.warn(
                "asd.external-artifact",
                pos,
                format!("the file of {what} is outside the package ({file}); it is not checked"),
            );
            return (file.to_string(), true, None);
        }
        if let Some(path) = self.find_file(file, false) {
            let sha = self.files.sha256_hex(&path);
            return (path, false, sha);
        }
        if chart && let Some(dir) = self.find_chart_dir(file) {
            return (dir, false, None);
        }
        let help = if chart {
            "add the chart to the package (a packaged chart `.tgz`, or a chart directory with its Chart.yaml), or correct the path (relative to the package root)"
        } else {
            "add the file to the package, or correct the path (relative to the package root)"
        };
        self.emit(
            Diagnostic::error(
                "asd.artifact-file-missing",
                format!("the file `{file}` of {what} is not in the package"),
            )
            .at(self.loc(pos))
            .with_help(help),
        );
        (file.to_string(), false, None)
    }

    /// The package path of the chart directory `file` (a directory with a `Chart.yaml`),
    /// relative to the package root, else to the entry definitions' directory.
    fn find_chart_dir(&self, file: &str) -> Option<String> {
        let dir = self.file.rsplit_once('/').map_or("", |(d, _)| d);
        [normalize_path("", file), normalize_path(dir, file)]
            .into_iter()
            .flatten()
            .find(|p| self.files.contains(&format!("{p}/Chart.yaml")))
    }

    /// The package path of `file`: relative to the package root, else to the entry definitions'
    /// directory. With `allow_dir`, a directory holding an `index.json` (an OCI layout) counts.
    fn find_file(&self, file: &str, allow_dir: bool) -> Option<String> {
        let dir = self.file.rsplit_once('/').map_or("", |(d, _)| d);
        [normalize_path("", file), normalize_path(dir, file)]
            .into_iter()
            .flatten()
            .find(|p| {
                self.files.contains(p)
                    || (allow_dir && self.files.contains(&format!("{p}/index.json")))
            })
    }

    pub(super) fn executable_image(
        &mut self,
        name: &Key,
        def: &Node,
        ty: &str,
    ) -> Option<ExecutableImage> {
        let what = format!("executable image artifact `{}`", name.name);
        let properties = def.get("properties");
        if let Some(p) = properties {
            self.check_names(Kind::Artifact, ty, p);
        }
        let mut p = Props::of(properties);
        let image_name = self.required_string(&mut p, SW_IMAGE_NAME, name.pos, &what);
        let version = self.required_string(&mut p, SW_IMAGE_VERSION, name.pos, &what);
        let (file, file_pos) = match def.get("file") {
            Some(f) => (self.string("file", f), f.pos),
            None => (None, name.pos),
        };
        let Some(file) = file else {
            self.error(
                "asd.missing-property",
                file_pos,
                format!("{what} has no `file`"),
            );
            return None;
        };
        let external = is_url(&file);
        let location = if external {
            file
        } else {
            match self.find_file(&file, true) {
                Some(path) => path,
                None => {
                    self.error(
                        "asd.artifact-file-missing",
                        file_pos,
                        format!("the file `{file}` of {what} is not in the package"),
                    );
                    file
                }
            }
        };
        Some(ExecutableImage {
            artifact_name: name.name.as_str().to_owned(),
            name: image_name.unwrap_or_default(),
            version: version.unwrap_or_default(),
            location,
            external,
        })
    }

    pub(super) fn duplicate_ids(&mut self, ids: &[(String, Pos, String)]) {
        let mut first: BTreeMap<&str, &str> = BTreeMap::new();
        for (id, pos, artifact) in ids {
            match first.get(id.as_str()) {
                Some(earlier) => {
                    let message = format!(
                        "deployment item id `{id}` of `{artifact}` is already used by `{earlier}`"
                    );
                    self.error("asd.duplicate-deployment-item-id", *pos, message);
                }
                None => {
                    first.insert(id, artifact);
                }
            }
        }
    }

    // ---- vendor extensions and name checks -------------------------------------------------

    /// The properties not read into the model, verbatim, with their declared type (if any)
    /// checked leniently.
    pub(super) fn extensions(
        &mut self,
        p: &Props<'_>,
        kind: Kind,
        ty: &str,
    ) -> BTreeMap<String, serde_json::Value> {
        let declared: BTreeMap<String, String> = self
            .types
            .properties(kind, ty)
            .map(|(props, _)| {
                props
                    .into_iter()
                    .map(|(n, d)| (n.to_string(), d.ty.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let mut out = BTreeMap::new();
        for (key, value) in p.rest() {
            let json = match (
                declared.get(key.name.as_str()).map(String::as_str),
                &value.value,
            ) {
                (Some("string"), Value::Float(_)) => self
                    .string(&key.name, value)
                    .map_or(serde_json::Value::Null, serde_json::Value::String),
                (Some("string"), Value::Seq(_) | Value::Map(_))
                | (
                    Some("integer"),
                    Value::Str(_)
                    | Value::Float(_)
                    | Value::Bool(_)
                    | Value::Seq(_)
                    | Value::Map(_),
                )
                | (
                    Some("boolean"),
                    Value::Str(_) | Value::Int(_) | Value::Float(_) | Value::Seq(_) | Value::Map(_),
                ) => {
                    let declared_type =
                        declared.get(key.name.as_str()).cloned().unwrap_or_default();
                    self.warn(
                        "asd.property-type-mismatch",
                        value.pos,
                        format!(
                            "`{}` is declared {declared_type} but is {}; kept as written",
                            key.name,
                            value.value.kind()
                        ),
                    );
                    value.to_json()
                }
                _ => value.to_json(),
            };
            out.insert(key.name.as_str().to_owned(), json);
        }
        out
    }

    /// Warns about property names the type (and, recursively, the data types of its
    /// properties) does not define. Unknown types are not checked.
    pub(super) fn check_names(&mut self, kind: Kind, ty: &str, map: &Node) {
        self.check_names_at(kind, ty, map, 0);
    }

    fn check_names_at(&mut self, kind: Kind, ty: &str, map: &Node, depth: usize) {
        if depth > 16 {
            return;
        }
        let Some(entries) = map.as_map() else {
            return;
        };
        let Some((props, source)) = self.types.properties(kind, ty) else {
            return;
        };
        let props: BTreeMap<String, (String, Option<String>)> = props
            .into_iter()
            .map(|(n, d)| (n.to_string(), (d.ty.clone(), d.entry.clone())))
            .collect();
        let source = source.to_string();
        for (key, value) in entries {
            match props.get(key.name.as_str()) {
                Some((pty, entry)) => {
                    if self.types.is_data_type(pty) {
                        self.check_names_at(Kind::Data, pty, value, depth + 1);
                    } else if let Some(entry) =
                        entry.as_deref().filter(|e| self.types.is_data_type(e))
                    {
                        let nested: Vec<&Node> = match &value.value {
                            Value::Seq(items) => items.iter().collect(),
                            Value::Map(m) if pty == "map" => m.iter().map(|(_, v)| v).collect(),
                            _ => Vec::new(),
                        };
                        for n in nested {
                            self.check_names_at(Kind::Data, entry, n, depth + 1);
                        }
                    }
                }
                // Reported as the item-id quirk by the item reader.
                None if key.name == "itemId"
                    && (props.contains_key("item_id")
                        || props.contains_key("deploymentItemId")) => {}
                None => self.emit(
                    Diagnostic::warning(
                        "asd.unknown-property",
                        format!(
                            "property `{}` is not defined by `{ty}` (types from {source})",
                            key.name
                        ),
                    )
                    .at(self.loc(key.pos))
                    .with_help(
                        "check the spelling, or declare the property in the package's types file",
                    ),
                ),
            }
        }
    }
}

/// What every deployment item has, whichever way it was declared.
struct ItemCommon {
    artifact_type: DeploymentArtifactType,
    order: Option<u32>,
    parameters: Vec<String>,
    extensions: BTreeMap<String, serde_json::Value>,
}
