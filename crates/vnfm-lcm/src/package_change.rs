//! Whether an instance may move to another VNF package (CHANGE_VNFPKG), checked before an
//! operation occurrence exists.
//!
//! SOL003's Change current VNF package (IFA007 ChangeCurrentVnfPackage) moves an instance to a
//! package of the same VNF: another software version, or another VNFD version. So:
//!
//! - the new VNFD has the instance's provider and product name, unless a
//!   `tosca.policies.nfv.VnfPackageChange` policy of the source or destination VNFD selects this
//!   change (source VNFD, destination VNFD, source flavour), which allows it explicitly;
//! - a policy's destination flavour is the instance's flavour, and its component mappings keep
//!   VDU and scaling aspect identifiers: the drivers and every later operation find the
//!   instance's resources by those identifiers, so a change that renames them is refused
//!   rather than carried out half-way;
//! - every VDU the instance has VNFCs of, and every scaling aspect of its scale status, is in the
//!   new VNFD's flavour, and each aspect's current level is within the new maximum: otherwise
//!   the instance would keep resources and levels its VNFD no longer describes, and the next
//!   scale or heal would compute from them.
//!
//! Every reason is reported at once, each saying what would make the change acceptable.

use vnfm_descriptor::{PackageChange, Vnfd};
use vnfm_types::VnfInstance;

use crate::error::LcmError;

/// Checks moving `instance` from its VNFD (`source`, when it is still onboarded) to `target`.
pub fn check(source: Option<&Vnfd>, target: &Vnfd, instance: &VnfInstance) -> Result<(), LcmError> {
    let Some(info) = instance.instantiated_vnf_info.as_ref() else {
        // Not instantiated: the request validation reports that.
        return Ok(());
    };
    let from = instance.vnfd_id.as_str();
    let to = target.descriptor_id.as_str();
    let flavour_id = info.flavour_id.as_str();
    let policy = target
        .package_change(from, to, flavour_id)
        .or_else(|| source.and_then(|s| s.package_change(from, to, flavour_id)));
    let mut reasons = Vec::new();
    match policy {
        None => {
            if target.provider != instance.vnf_provider
                || target.product_name != instance.vnf_product_name
            {
                reasons.push(format!(
                    "the new VNFD describes {:?} by {:?}, the instance is {:?} by {:?}: a package change stays within one VNF product, unless a VnfPackageChange policy of either VNFD selects source {from}, destination {to} and flavour {flavour_id}",
                    target.product_name,
                    target.provider,
                    instance.vnf_product_name,
                    instance.vnf_provider
                ));
            }
        }
        Some(p) => policy_reasons(p, flavour_id, &mut reasons),
    }
    // A flavour the new VNFD lacks is reported by the request validation (with the known ones).
    if let Some(flavour) = target.flavour(flavour_id) {
        let mut vdus: Vec<&str> = info
            .vnfc_resource_info
            .iter()
            .flatten()
            .map(|r| r.vdu_id.as_str())
            .collect();
        vdus.sort_unstable();
        vdus.dedup();
        for vdu in vdus {
            if flavour.vdu(vdu).is_none() {
                reasons.push(format!(
                    "the instance has VNFCs of VDU {vdu}, which flavour {flavour_id} of the new VNFD does not declare: scale them in first, or choose a package that keeps the VDU"
                ));
            }
        }
        for scale in info.scale_status.iter().flatten() {
            match flavour.scaling_aspect(&scale.aspect_id) {
                None => reasons.push(format!(
                    "the instance is scaled in aspect {}, which flavour {flavour_id} of the new VNFD does not declare",
                    scale.aspect_id
                )),
                Some(a) if scale.scale_level > a.max_scale_level => reasons.push(format!(
                    "aspect {} is at scale level {}, above the new VNFD's max_scale_level {}: scale in first",
                    scale.aspect_id, scale.scale_level, a.max_scale_level
                )),
                Some(_) => {}
            }
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(LcmError::PackageChangeRefused {
            from_vnfd_id: from.to_string(),
            to_vnfd_id: to.to_string(),
            reasons,
        })
    }
}

/// What `policy` asks that this VNFM does not carry out.
fn policy_reasons(policy: &PackageChange, flavour_id: &str, reasons: &mut Vec<String>) {
    if policy.destination_flavour_id != flavour_id {
        reasons.push(format!(
            "VnfPackageChange policy {} moves the instance to flavour {}, and a package change here keeps the flavour ({flavour_id}): change the package within the flavour, then CHANGE_FLAVOUR",
            policy.id, policy.destination_flavour_id
        ));
    }
    for m in &policy.component_mappings {
        if m.source_id != m.destination_id
            && matches!(m.component_type.as_str(), "vdu" | "scaling_aspect")
        {
            reasons.push(format!(
                "VnfPackageChange policy {} renames {} {} to {}, which is not supported: keep the identifier in the new VNFD",
                policy.id, m.component_type, m.source_id, m.destination_id
            ));
        }
    }
}
