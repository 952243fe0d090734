//! Named deviations from TOSCA / ETSI SOL001 that the reader tolerates.
//!
//! Published ETSI type files and widely used sample packages (OpenStack Tacker's in particular)
//! break a few rules of the TOSCA grammar. Rejecting them would make the reader useless on real
//! packages; accepting them silently would hide the problem from their authors. Each tolerated
//! deviation is therefore a named [`Quirk`]: when one is met, the reader goes on as described
//! below and reports a warning whose code is `tosca.quirk.<name>` and whose message names the
//! quirk. A quirk is never an error and never changes what a conforming descriptor means.
//!
//! | quirk | code | what is tolerated | how it is read |
//! |---|---|---|---|
//! | `EmptyListOperation` | `tosca.quirk.empty-list-operation` | an operation assigned an empty list, e.g. Tacker's `Vnflcm: { instantiate: [] }` (TOSCA wants an operation definition map or an implementation string) | the operation is declared without an implementation, so it is not a hook |
//! | `VnfRequirementLowerBound` | `tosca.quirk.vnf-requirement-lower-bound` | the VNF node template (type derived from `tosca.nodes.nfv.VNF`) assigns a requirement fewer times than the lower bound of its `occurrences` (requirements declared without `occurrences` default to `[1, 1]`; VNFDs leave the VNF's links to the NSD or to the flavours' substitution mappings). Other node templates may leave requirements open without a diagnostic: TOSCA lets the orchestrator fulfil them | the requirement stays open |
//! | `EmptySubstitutionRequirement` | `tosca.quirk.empty-substitution-requirement` | a substitution mapping requirement given as an empty list (`virtual_link_external: []`, Tacker CNF samples) instead of `[node_template, requirement]` | the requirement is not mapped (no external connection point) |
//! | `UndeclaredSubstitutionRequirement` | `tosca.quirk.undeclared-substitution-requirement` | a substitution mapping requirement whose name is not a requirement of the substituted node type (Tacker's `virtual_link_external1_1` next to a type that declares `virtual_link_external1`) | the mapping is kept; the external connection point is exposed under the given name |
//! | `DanglingSubstitutionRequirement` | `tosca.quirk.dangling-substitution-requirement` | a substitution mapping requirement naming a node template that the flavour does not have (Tacker's `userdata_standard_with_non_boot_volume` maps `VDU2_CP1` after dropping VDU2) | the mapping is ignored |
//! | `SubstitutionTargetRequirementUndeclared` | `tosca.quirk.substitution-target-requirement-undeclared` | a substitution mapping requirement `[node_template, requirement]` whose requirement the node template's type does not declare (Tacker's `practical_vnf_package` maps `[VDU0_extCP0, external_virtual_link]` onto a `tosca.nodes.nfv.VduCp`, which has `virtual_link` and `virtual_binding`) | the mapping is kept: the node template is exposed as an external connection point under the mapped requirement's name (the requirement named on the node template is not used) |
//! | `UndeclaredFlavourId` | `tosca.quirk.undeclared-flavour-id` | a `flavour_id` (in a substitution mapping or on a VNF node template) that the `valid_values`/`equal` constraint of the VNF node type's `flavour_id` does not list (Tacker's `test_cnf` adds a `vdumap` flavour to a type that lists only `simple`) | the flavour is read under the given id |
//! | `VnfPropertyNotInValidValues` | `tosca.quirk.vnf-property-not-in-valid-values` | another property of a VNF node template whose value violates a `valid_values`/`equal` constraint of the VNF node type (Tacker's `sample_vnf_package_csar_in_meta_and_manifest`: `provider: Company Provider` against `valid_values: [' Company Provider lab']`); other constraints and types are still enforced | the template's value is used |
//! | `PlacementGroupWithoutDescription` | `tosca.quirk.placement-group-without-description` | a `tosca.groups.nfv.PlacementGroup` group without its required `description` property (every Tacker v2 VM sample) | the group is read without a description |
//! | `UntypedArtifact` | `tosca.quirk.untyped-artifact` | an artifact in short notation (`sw_image: ../Files/images/x.img`) whose type neither the node type nor the file extension gives (Tacker's short-notation sample) | read as `tosca.artifacts.nfv.SwImage` when named `sw_image` (and the SOL001 types are imported), otherwise as `tosca.artifacts.File` |
//! | `UndefinedImplementationArtifactType` | `tosca.quirk.undefined-implementation-artifact-type` | an artifact type that no file defines but whose name starts with `tosca.artifacts.Implementation.` (Tacker's `tosca.artifacts.Implementation.Yaml` for Ansible playbooks) | the artifact keeps the type name and is treated as an implementation artifact |
//! | `ArtifactPathFromPackageRoot` | `tosca.quirk.artifact-path-from-package-root` | an artifact `file` that does not exist relative to the definitions file declaring it but does exist relative to the package root (e.g. `ScriptANSIBLE/config.yaml` written in `Definitions/df.yaml`) | the file is taken from the package root |
//! | `EtsiTypeRedefinition` | `tosca.quirk.etsi-type-redefinition` | a type defined differently by two ETSI SOL001 type files of one version (the v2.5.1 nsd/pnfd files repeat vnfd types with changes, e.g. `address_data` of `tosca.datatypes.nfv.CpProtocolData` without `required: false`; the v2.6.1 nsd file redefines `tosca.groups.nfv.PlacementGroup` and `tosca.policies.nfv.AffinityRule`/`AntiAffinityRule` with NS-level members) | the first definition read is used (the importing order decides; a VNFD normally reads the vnfd file first) |
//! | `PoliciesAsMap` | `tosca.quirk.policies-as-map` | `policies` written as a map (TOSCA 1.0 style) instead of a list of single-entry maps | each entry is read as one policy |
//!
//! Everything else that breaks the grammar or the type system is an error (or, for things that
//! only prevent deployment such as an absent artifact file, a plain warning with its own code).

/// A tolerated deviation; see the module documentation for the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Quirk {
    /// An operation assigned `[]`.
    EmptyListOperation,
    /// The VNF node leaves requirements below their lower bound.
    VnfRequirementLowerBound,
    /// A substitution mapping requirement given as `[]`.
    EmptySubstitutionRequirement,
    /// A substitution mapping requirement the substituted node type does not declare.
    UndeclaredSubstitutionRequirement,
    /// A substitution mapping requirement naming a node template that does not exist.
    DanglingSubstitutionRequirement,
    /// A substitution mapping requirement naming a requirement its node template lacks.
    SubstitutionTargetRequirementUndeclared,
    /// A `flavour_id` outside the VNF node type's `valid_values`.
    UndeclaredFlavourId,
    /// A VNF property outside the VNF node type's `valid_values`.
    VnfPropertyNotInValidValues,
    /// A PlacementGroup without its required `description`.
    PlacementGroupWithoutDescription,
    /// A short-notation artifact whose type cannot be told.
    UntypedArtifact,
    /// An undefined `tosca.artifacts.Implementation.*` artifact type.
    UndefinedImplementationArtifactType,
    /// An artifact path relative to the package root instead of the declaring file.
    ArtifactPathFromPackageRoot,
    /// A type defined differently by two ETSI SOL001 files.
    EtsiTypeRedefinition,
    /// `policies` as a map.
    PoliciesAsMap,
}

impl Quirk {
    /// Every quirk, in documentation order.
    pub const ALL: [Quirk; 14] = [
        Quirk::EmptyListOperation,
        Quirk::VnfRequirementLowerBound,
        Quirk::EmptySubstitutionRequirement,
        Quirk::UndeclaredSubstitutionRequirement,
        Quirk::DanglingSubstitutionRequirement,
        Quirk::SubstitutionTargetRequirementUndeclared,
        Quirk::UndeclaredFlavourId,
        Quirk::VnfPropertyNotInValidValues,
        Quirk::PlacementGroupWithoutDescription,
        Quirk::UntypedArtifact,
        Quirk::UndefinedImplementationArtifactType,
        Quirk::ArtifactPathFromPackageRoot,
        Quirk::EtsiTypeRedefinition,
        Quirk::PoliciesAsMap,
    ];

    /// The quirk's name, as shown in messages.
    pub fn name(self) -> &'static str {
        match self {
            Quirk::EmptyListOperation => "EmptyListOperation",
            Quirk::VnfRequirementLowerBound => "VnfRequirementLowerBound",
            Quirk::EmptySubstitutionRequirement => "EmptySubstitutionRequirement",
            Quirk::UndeclaredSubstitutionRequirement => "UndeclaredSubstitutionRequirement",
            Quirk::DanglingSubstitutionRequirement => "DanglingSubstitutionRequirement",
            Quirk::SubstitutionTargetRequirementUndeclared => {
                "SubstitutionTargetRequirementUndeclared"
            }
            Quirk::UndeclaredFlavourId => "UndeclaredFlavourId",
            Quirk::VnfPropertyNotInValidValues => "VnfPropertyNotInValidValues",
            Quirk::PlacementGroupWithoutDescription => "PlacementGroupWithoutDescription",
            Quirk::UntypedArtifact => "UntypedArtifact",
            Quirk::UndefinedImplementationArtifactType => "UndefinedImplementationArtifactType",
            Quirk::ArtifactPathFromPackageRoot => "ArtifactPathFromPackageRoot",
            Quirk::EtsiTypeRedefinition => "EtsiTypeRedefinition",
            Quirk::PoliciesAsMap => "PoliciesAsMap",
        }
    }

    /// The stable diagnostic code of the quirk's warning.
    pub fn code(self) -> &'static str {
        match self {
            Quirk::EmptyListOperation => "tosca.quirk.empty-list-operation",
            Quirk::VnfRequirementLowerBound => "tosca.quirk.vnf-requirement-lower-bound",
            Quirk::EmptySubstitutionRequirement => "tosca.quirk.empty-substitution-requirement",
            Quirk::UndeclaredSubstitutionRequirement => {
                "tosca.quirk.undeclared-substitution-requirement"
            }
            Quirk::DanglingSubstitutionRequirement => {
                "tosca.quirk.dangling-substitution-requirement"
            }
            Quirk::SubstitutionTargetRequirementUndeclared => {
                "tosca.quirk.substitution-target-requirement-undeclared"
            }
            Quirk::UndeclaredFlavourId => "tosca.quirk.undeclared-flavour-id",
            Quirk::VnfPropertyNotInValidValues => "tosca.quirk.vnf-property-not-in-valid-values",
            Quirk::PlacementGroupWithoutDescription => {
                "tosca.quirk.placement-group-without-description"
            }
            Quirk::UntypedArtifact => "tosca.quirk.untyped-artifact",
            Quirk::UndefinedImplementationArtifactType => {
                "tosca.quirk.undefined-implementation-artifact-type"
            }
            Quirk::ArtifactPathFromPackageRoot => "tosca.quirk.artifact-path-from-package-root",
            Quirk::EtsiTypeRedefinition => "tosca.quirk.etsi-type-redefinition",
            Quirk::PoliciesAsMap => "tosca.quirk.policies-as-map",
        }
    }

    /// What the author can do instead.
    pub fn help(self) -> &'static str {
        match self {
            Quirk::EmptyListOperation => "leave the operation out, or give it an `implementation`",
            Quirk::VnfRequirementLowerBound => {
                "declare `occurrences: [0, 1]` on the requirement in the VNF node type"
            }
            Quirk::EmptySubstitutionRequirement => {
                "leave the requirement out of `substitution_mappings`, or map it as `[node_template, requirement]`"
            }
            Quirk::UndeclaredSubstitutionRequirement => {
                "declare the requirement in the VNF node type (derived from tosca.nodes.nfv.VNF)"
            }
            Quirk::DanglingSubstitutionRequirement => {
                "remove the mapping, or map it to a node template of this flavour"
            }
            Quirk::SubstitutionTargetRequirementUndeclared => {
                "map the requirement to one the node template's type declares (for a VduCp or VnfExtCp: `[CP, virtual_link]` or `[CP, external_virtual_link]` as its type allows)"
            }
            Quirk::UndeclaredFlavourId => {
                "add the flavour id to the `valid_values` of `flavour_id` in the VNF node type"
            }
            Quirk::VnfPropertyNotInValidValues => {
                "make the node template's value and the node type's `valid_values` agree"
            }
            Quirk::PlacementGroupWithoutDescription => "give the group a `description` property",
            Quirk::UntypedArtifact => {
                "give the artifact a `type` (e.g. tosca.artifacts.nfv.SwImage)"
            }
            Quirk::UndefinedImplementationArtifactType => {
                "define the artifact type (derived from tosca.artifacts.Implementation) or use a defined one"
            }
            Quirk::ArtifactPathFromPackageRoot => {
                "write the path relative to the definitions file (e.g. `../Scripts/x`)"
            }
            Quirk::EtsiTypeRedefinition => {
                "import only the ETSI files the descriptor needs (a VNFD needs the common and vnfd types)"
            }
            Quirk::PoliciesAsMap => "write `policies` as a list of single-entry maps",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_are_distinct_and_prefixed() {
        let mut codes: Vec<_> = Quirk::ALL.iter().map(|q| q.code()).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), Quirk::ALL.len());
        for q in Quirk::ALL {
            assert!(q.code().starts_with("tosca.quirk."));
            assert!(!q.help().is_empty());
            let kebab: String = q
                .name()
                .chars()
                .enumerate()
                .flat_map(|(i, c)| {
                    let dash = (i > 0 && c.is_ascii_uppercase()).then_some('-');
                    dash.into_iter()
                        .chain(std::iter::once(c.to_ascii_lowercase()))
                })
                .collect();
            assert_eq!(q.code(), format!("tosca.quirk.{kebab}"));
        }
    }
}
