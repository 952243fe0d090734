//! External connection points, network interface requirements and cluster capabilities.

use super::*;

impl Cx<'_> {
    pub(super) fn ext_cpds(&mut self, key: &Key, v: &Node) -> Vec<ExtCpd> {
        let mut out: Vec<ExtCpd> = Vec::new();
        let mut seen: BTreeMap<String, Pos> = BTreeMap::new();
        for (i, entry) in self.seq(&key.name, v).iter().enumerate() {
            let what = format!("{}[{i}]", key.name);
            let Some(entry) = self.map(&what, entry) else {
                continue;
            };
            let mut p = Props::of(Some(entry));
            let Some(id) = self.optional_string(&mut p, &["id"]) else {
                self.error(
                    "asd.missing-property",
                    entry.pos,
                    format!("external connection point `{what}` has no `id`"),
                );
                continue;
            };
            let id_pos = entry.get("id").map_or(entry.pos, |n| n.pos);
            if let Some(first) = seen.get(&id) {
                let message = format!(
                    "external connection point id `{id}` is used twice (first at line {})",
                    first.line
                );
                self.error("asd.duplicate-ext-cpd-id", id_pos, message);
            } else {
                seen.insert(id.clone(), id_pos);
            }
            let description = self.optional_string(&mut p, &["description"]);
            let virtual_link_requirement = self.optional_string(
                &mut p,
                &["virtualLinkRequirement", "virtual_link_requirement"],
            );
            let network_interface_realization_requirements = match p.take(
                self,
                &[
                    "networkInterfaceRealizationRequirements",
                    "network_interface_realization_requirements",
                ],
            ) {
                Some((k, v)) => self.map(&k.name, v).map(|m| self.interface_requirements(m)),
                None => None,
            };
            let input_param_mappings =
                match p.take(self, &["inputParamMappings", "input_param_mappings"]) {
                    Some((k, v)) => self.map(&k.name, v).map(|m| self.param_mappings(m)),
                    None => None,
                };
            let resource_mapping =
                self.optional_string(&mut p, &["resourceMapping", "resource_mapping"]);
            out.push(ExtCpd {
                id,
                description,
                virtual_link_requirement,
                network_interface_realization_requirements,
                input_param_mappings,
                resource_mapping,
            });
        }
        out
    }

    fn interface_requirements(&mut self, m: &Node) -> NetworkInterfaceRequirements {
        let mut p = Props::of(Some(m));
        let trunk_mode = match p.take(self, &["trunkMode", "trunk_mode"]) {
            Some((k, v)) => self.boolean(&k.name, v).unwrap_or(false),
            None => false,
        };
        let ipam = match p.take(self, &["ipam"]) {
            Some((k, v)) => self.enumerated(
                &k.name,
                v,
                &[
                    ("infraProvided", Ipam::InfraProvided),
                    ("orchestrated", Ipam::Orchestrated),
                    ("userManaged", Ipam::UserManaged),
                ],
            ),
            None => None,
        }
        .unwrap_or(Ipam::InfraProvided);
        let interface_type = match p.take(self, &["interfaceType", "interface_type"]) {
            Some((k, v)) => self.enumerated(
                &k.name,
                v,
                &[
                    ("kernel.netdev", InterfaceType::KernelNetdev),
                    ("direct.userspace", InterfaceType::DirectUserspace),
                    // ONAP 0.1 spelling.
                    ("direct.userdriver", InterfaceType::DirectUserspace),
                    ("direct.kerneldriver", InterfaceType::DirectKerneldriver),
                    ("direct.bond", InterfaceType::DirectBond),
                    ("userspace", InterfaceType::Userspace),
                ],
            ),
            None => None,
        }
        .unwrap_or(InterfaceType::KernelNetdev);
        let interface_options = match p.take(
            self,
            &[
                "interfaceOption",
                "interfaceOptions",
                "interface_option",
                "interface_options",
            ],
        ) {
            Some((k, v)) => {
                let entries: &[Node] = match v.as_seq() {
                    Some(s) => s,
                    None => std::slice::from_ref(v),
                };
                entries
                    .iter()
                    .filter_map(|e| {
                        self.enumerated(
                            &k.name,
                            e,
                            &[
                                ("virtio", InterfaceOption::Virtio),
                                ("memif", InterfaceOption::Memif),
                            ],
                        )
                    })
                    .collect()
            }
            None => Vec::new(),
        };
        let interface_redundancy =
            match p.take(self, &["interfaceRedundancy", "interface_redundancy"]) {
                Some((k, v)) => self.enumerated(
                    &k.name,
                    v,
                    &[
                        ("infraProvided", InterfaceRedundancy::InfraProvided),
                        ("left", InterfaceRedundancy::Left),
                        ("right", InterfaceRedundancy::Right),
                        ("activeActiveBond", InterfaceRedundancy::ActiveActiveBond),
                        ("activePassiveBond", InterfaceRedundancy::ActivePassiveBond),
                        ("activePassiveL3", InterfaceRedundancy::ActivePassiveL3),
                        ("activeActiveL3", InterfaceRedundancy::ActiveActiveL3),
                        // ONAP 0.1 spellings, and the O-RAN 2.0 prose's lowercase `l3`.
                        ("Left", InterfaceRedundancy::Left),
                        ("Right", InterfaceRedundancy::Right),
                        ("actActBond", InterfaceRedundancy::ActiveActiveBond),
                        ("actPassBond", InterfaceRedundancy::ActivePassiveBond),
                        ("actPassL3", InterfaceRedundancy::ActivePassiveL3),
                        ("actActL3", InterfaceRedundancy::ActiveActiveL3),
                        ("activePassivel3", InterfaceRedundancy::ActivePassiveL3),
                    ],
                ),
                None => None,
            };
        let nic_options = match p.take(self, &["nicOptions", "nic_options"]) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        NetworkInterfaceRequirements {
            trunk_mode,
            ipam,
            interface_type,
            interface_options,
            interface_redundancy,
            nic_options,
        }
    }

    fn param_mappings(&mut self, m: &Node) -> ParamMappings {
        let mut p = Props::of(Some(m));
        let loadbalancer_ip = self.optional_string(
            &mut p,
            &[
                "loadbalancerIP",
                "loadBalancerIP",
                "loadbalancer_ip",
                "loadbalancer_IP",
            ],
        );
        let external_ips = match p.take(self, &["externalIPs", "external_ips", "external_IPs"]) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        let nad_names = match p.take(self, &["nadName", "nadNames", "nad_names"]) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        let nad_namespace = self.optional_string(&mut p, &["nadNamespace", "nad_namespace"]);
        ParamMappings {
            loadbalancer_ip,
            external_ips,
            nad_names,
            nad_namespace,
        }
    }

    // ---- cluster capabilities ---------------------------------------------------------------

    pub(super) fn cluster_capabilities(
        &mut self,
        key: &Key,
        v: &Node,
    ) -> Option<EnhancedClusterCapabilities> {
        let m = self.map(&key.name, v)?;
        let mut p = Props::of(Some(m));
        let min_kernel_version =
            self.optional_string(&mut p, &["minKernelVersion", "min_kernel_version"]);
        let required_kernel_modules = match p.take(
            self,
            &[
                "requiredKernelModule",
                "requiredKernelModules",
                "required_kernel_modules",
            ],
        ) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        let conflicting_kernel_modules = match p.take(
            self,
            &[
                "conflictingKernelModule",
                "conflictingKernelModules",
                "conflicting_kernel_modules",
            ],
        ) {
            Some((k, v)) => self.strings(&k.name, v, true),
            None => Vec::new(),
        };
        let mut required_custom_resources = Vec::new();
        if let Some((k, v)) = p.take(
            self,
            &[
                "requiredCustomResource",
                "requiredCustomResources",
                "required_custom_resources",
            ],
        ) {
            for entry in self.seq(&k.name, v) {
                let Some(entry) = self.map(&k.name, entry) else {
                    continue;
                };
                let mut e = Props::of(Some(entry));
                let Some(kind) = self.optional_string(&mut e, &["kind"]) else {
                    self.error(
                        "asd.missing-property",
                        entry.pos,
                        format!("an entry of `{}` has no `kind`", k.name),
                    );
                    continue;
                };
                let api_version = self.optional_string(&mut e, &["apiVersion", "api_version"]);
                required_custom_resources.push(RequiredCustomResource { kind, api_version });
            }
        }
        let mut cluster_labels = Vec::new();
        for (names, requirement) in [
            (
                &["clusterLabel", "clusterLabels", "cluster_labels"][..],
                LabelRequirement::Mandatory,
            ),
            (
                &[
                    "preferredClusterLabel",
                    "preferredClusterLabels",
                    "preferred_cluster_labels",
                ][..],
                LabelRequirement::Preferred,
            ),
        ] {
            if let Some((k, v)) = p.take(self, names) {
                let entries: &[Node] = match v.as_seq() {
                    Some(s) => s,
                    None => std::slice::from_ref(v),
                };
                for entry in entries {
                    if let Some(label) = self.cluster_label(&k.name, entry) {
                        cluster_labels.push(ClusterLabel { label, requirement });
                    }
                }
            }
        }
        let mut required_plugins = Vec::new();
        if let Some((k, v)) = p.take(
            self,
            &[
                "requiredPlugin",
                "requiredPlugins",
                "required_plugin",
                "required_plugins",
            ],
        ) {
            for entry in self.seq(&k.name, v) {
                let Some(entry) = self.map(&k.name, entry) else {
                    continue;
                };
                let mut e = Props::of(Some(entry));
                let Some(name) = self.optional_string(&mut e, &["requiredPluginName", "name"])
                else {
                    self.error(
                        "asd.missing-property",
                        entry.pos,
                        format!("an entry of `{}` has no `requiredPluginName`", k.name),
                    );
                    continue;
                };
                let version = self.optional_string(&mut e, &["requiredPluginVersion", "version"]);
                required_plugins.push(RequiredPlugin { name, version });
            }
        }
        Some(EnhancedClusterCapabilities {
            min_kernel_version,
            required_kernel_modules,
            conflicting_kernel_modules,
            required_custom_resources,
            cluster_labels,
            required_plugins,
        })
    }

    /// A label written as a string, or as a one-entry map `key: value` (read as `key=value`).
    fn cluster_label(&mut self, what: &str, entry: &Node) -> Option<String> {
        if let Some([(k, v)]) = entry.as_map()
            && let Some(value) = v.scalar_text()
        {
            return Some(format!("{}={value}", k.name));
        }
        if entry.as_map().is_some() {
            self.error(
                "asd.type-mismatch",
                entry.pos,
                format!("an entry of `{what}` must be a label string or a single `key: value`"),
            );
            return None;
        }
        self.string(what, entry)
    }

    // ---- deployment items -------------------------------------------------------------------
}
