//! Text rendering of package reports for people.

use std::fmt::Write;

use vnfm::descriptor::{Asd, Descriptor, Flavour, Severity, Vnfd};
use vnfm::package::PackageReport;

/// The `validate` output of one package: a status line, then its diagnostics.
pub(crate) fn validation_text(path: &str, report: &PackageReport) -> String {
    let mut s = String::new();
    let status = if report.is_valid() { "ok  " } else { "FAIL" };
    let summary = match &report.descriptor {
        Some(Descriptor::Vnfd(v)) => format!(
            "VNFD {} ({} flavour{})",
            v.descriptor_id,
            v.flavours.len(),
            plural(v.flavours.len())
        ),
        Some(Descriptor::Asd(a)) => format!("ASD {}", a.asd_id),
        None => "no descriptor".to_string(),
    };
    let _ = writeln!(
        s,
        "{status} {path}: {summary}, {} error{}, {} warning{}",
        report.count(Severity::Error),
        plural(report.count(Severity::Error)),
        report.count(Severity::Warning),
        plural(report.count(Severity::Warning)),
    );
    for d in &report.diagnostics {
        for (i, line) in d.to_string().lines().enumerate() {
            let indent = if i == 0 { "  " } else { "    " };
            let _ = writeln!(s, "{indent}{}", line.trim_start());
        }
    }
    s
}

/// The `show` output: what the package contains, for a person deciding how to deploy it.
pub(crate) fn show_text(path: &str, report: &PackageReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "Package: {path}");
    match &report.descriptor {
        Some(Descriptor::Vnfd(v)) => vnfd_text(&mut s, v),
        Some(Descriptor::Asd(a)) => asd_text(&mut s, a),
        None => {
            let _ = writeln!(s, "No descriptor could be read.");
        }
    }
    if let Some(package) = &report.package {
        let _ = writeln!(s, "Files:");
        for file in package.files() {
            let digest = package
                .sha256_hex(file)
                .unwrap_or_else(|e| format!("unreadable: {e}"));
            let _ = writeln!(s, "  {file}  sha256:{digest}");
        }
    }
    if !report.diagnostics.is_empty() {
        let _ = writeln!(s, "Diagnostics:");
        for d in &report.diagnostics {
            for line in d.to_string().lines() {
                let _ = writeln!(s, "  {}", line.trim_start());
            }
        }
    }
    let _ = writeln!(s, "Valid: {}", if report.is_valid() { "yes" } else { "no" });
    s
}

fn vnfd_text(s: &mut String, v: &Vnfd) {
    let _ = writeln!(
        s,
        "Descriptor: VNFD {} version {}",
        v.descriptor_id, v.descriptor_version
    );
    let _ = writeln!(
        s,
        "Product: {} {} by {}",
        v.product_name, v.software_version, v.provider
    );
    let sol001 = v.sol001_version.as_deref().unwrap_or("unknown");
    let _ = writeln!(
        s,
        "Definitions: {} ({}, SOL001 {sol001}); VNF node type {}",
        v.entry_definitions, v.tosca_definitions_version, v.vnf_node_type
    );
    if !v.vnfm_info.is_empty() {
        let _ = writeln!(s, "VNFM info: {}", v.vnfm_info.join(", "));
    }
    for f in &v.flavours {
        flavour_text(s, f);
    }
}

fn flavour_text(s: &mut String, f: &Flavour) {
    let _ = writeln!(s, "Flavour {}: {} ({})", f.id, f.description, f.file);
    if !f.vdus.is_empty() {
        let _ = writeln!(s, "  VDUs:");
    }
    for vdu in &f.vdus {
        let mut line = format!(
            "    {} [{:?}] instances {}..{}",
            vdu.id, vdu.kind, vdu.min_instances, vdu.max_instances
        );
        if let Some(initial) = vdu.initial_delta {
            let _ = write!(line, " (initial {initial})");
        }
        if let Some(c) = &vdu.virtual_compute {
            if let Some(cpu) = c.num_virtual_cpu {
                let _ = write!(line, ", {cpu} vCPU");
            }
            if let Some(mem) = c.virtual_mem_size_bytes {
                let _ = write!(line, ", {} memory", bytes(mem));
            }
        }
        if let Some(image) = &vdu.sw_image {
            let _ = write!(line, ", image {}", image.name);
        }
        if !vdu.virtual_storages.is_empty() {
            let _ = write!(line, ", storage [{}]", vdu.virtual_storages.join(", "));
        }
        if !vdu.containers.is_empty() {
            let _ = write!(line, ", containers [{}]", vdu.containers.join(", "));
        }
        let _ = writeln!(s, "{line}");
    }
    for st in &f.virtual_storages {
        let size = st.size_bytes.map(bytes).unwrap_or_else(|| "?".into());
        let _ = writeln!(s, "  Storage {} [{:?}] {size}", st.id, st.kind);
    }
    if !f.ext_cps.is_empty() {
        let _ = writeln!(s, "  External CPs:");
        for cp in &f.ext_cps {
            let via = cp.requirement.as_deref().unwrap_or("-");
            let vdu = cp
                .vdu
                .as_deref()
                .or(cp.internal_virtual_link.as_deref())
                .unwrap_or("-");
            let _ = writeln!(s, "    {} (requirement {via}) -> {vdu}", cp.id);
        }
    }
    for vl in &f.virtual_links {
        let cidrs = if vl.cidrs.is_empty() {
            String::new()
        } else {
            format!(" {}", vl.cidrs.join(", "))
        };
        let _ = writeln!(s, "  Virtual link {}{cidrs}", vl.id);
    }
    for a in &f.scaling_aspects {
        let deltas: Vec<String> = a
            .vdu_deltas
            .iter()
            .map(|(vdu, d)| {
                let per: Vec<String> = d.iter().map(|(id, n)| format!("{id}=+{n}")).collect();
                format!("{vdu} {}", per.join(" "))
            })
            .collect();
        let _ = writeln!(
            s,
            "  Scaling aspect {}: max level {}, steps [{}], deltas [{}]",
            a.id,
            a.max_scale_level,
            a.step_deltas.join(", "),
            deltas.join("; ")
        );
    }
    for l in &f.instantiation_levels {
        let default = if f.default_instantiation_level.as_deref() == Some(&l.id) {
            " (default)"
        } else {
            ""
        };
        let vdus: Vec<String> = l
            .vdu_instances
            .iter()
            .map(|(v, n)| format!("{v}={n}"))
            .collect();
        let _ = writeln!(
            s,
            "  Instantiation level {}{default}: {}",
            l.id,
            vdus.join(" ")
        );
    }
    for r in &f.placement_rules {
        let _ = writeln!(
            s,
            "  {:?} ({}) {}: {}",
            r.kind,
            r.scope,
            r.id,
            r.vdus.join(", ")
        );
    }
    if !f.lcm_hooks.is_empty() {
        let _ = writeln!(s, "  Hooks:");
    }
    for h in &f.lcm_hooks {
        let artifact = f.artifact(None, &h.artifact);
        let detail = match artifact {
            Some(a) => {
                let digest = match &a.sha256 {
                    Some(d) => format!("sha256:{}", &d[..d.len().min(16)]),
                    None if a.external => "external".to_string(),
                    None => "file missing".to_string(),
                };
                format!("{} ({}, {digest})", a.file, a.artifact_type)
            }
            None => "undeclared artifact".to_string(),
        };
        let deps = if h.dependencies.is_empty() {
            String::new()
        } else {
            format!(" + [{}]", h.dependencies.join(", "))
        };
        let _ = writeln!(s, "    {} -> {}{deps}: {detail}", h.operation, h.artifact);
    }
    if !f.artifacts.is_empty() {
        let _ = writeln!(s, "  Artifacts:");
    }
    for a in &f.artifacts {
        let digest = a
            .sha256
            .as_deref()
            .map(|d| format!("sha256:{d}"))
            .unwrap_or_else(|| {
                if a.external {
                    "external".into()
                } else {
                    "file missing".into()
                }
            });
        let _ = writeln!(
            s,
            "    {}.{} [{}] {} {digest}",
            a.owner, a.name, a.artifact_type, a.file
        );
    }
}

fn asd_text(s: &mut String, a: &Asd) {
    let _ = writeln!(
        s,
        "Descriptor: ASD {} version {} ({:?} dialect)",
        a.asd_id, a.asd_version, a.dialect
    );
    let _ = writeln!(
        s,
        "Application: {} {} by {}",
        a.application_name, a.application_version, a.provider
    );
    let _ = writeln!(
        s,
        "Definitions: {} ({})",
        a.entry_definitions, a.tosca_definitions_version
    );
    for cp in &a.ext_cpds {
        let vl = cp.virtual_link_requirement.as_deref().unwrap_or("-");
        let _ = writeln!(s, "  External CPD {} (virtual link {vl})", cp.id);
    }
    if let Some(caps) = &a.enhanced_cluster_capabilities {
        if let Some(kernel) = &caps.min_kernel_version {
            let _ = writeln!(s, "  Requires kernel >= {kernel}");
        }
        for m in &caps.required_kernel_modules {
            let _ = writeln!(s, "  Requires kernel module {m}");
        }
        for crd in &caps.required_custom_resources {
            let _ = writeln!(s, "  Requires custom resource {}", crd.kind);
        }
        for l in &caps.cluster_labels {
            let _ = writeln!(s, "  Cluster label {} ({:?})", l.label, l.requirement);
        }
    }
    for (i, stage) in a.stages.iter().enumerate() {
        let order = stage
            .order
            .map(|o| format!("order {o}"))
            .unwrap_or_else(|| "no order".into());
        let _ = writeln!(s, "Stage {} ({order}):", i + 1);
        for id in &stage.items {
            let Some(item) = a.deployment_items.iter().find(|d| &d.id == id) else {
                continue;
            };
            let digest = match &item.sha256 {
                Some(d) => format!("sha256:{}", &d[..d.len().min(16)]),
                None if item.external => "external".into(),
                None => "file missing".into(),
            };
            let _ = writeln!(
                s,
                "  {} [{:?}] {} {digest}",
                item.id, item.artifact_type, item.file
            );
            if !item.lifecycle_parameters.is_empty() {
                let _ = writeln!(
                    s,
                    "    parameters: {}",
                    item.lifecycle_parameters.join(", ")
                );
            }
        }
    }
    for image in &a.images {
        let name = image.ref_name.as_deref().unwrap_or("(no ref name)");
        let _ = writeln!(s, "  Image {name} in {} ({})", image.layout, image.digest);
    }
}

/// The deployment summary of an onboarded VNFD for `vnfm pkg show`: per flavour its VDUs
/// with their instance ranges, its scaling aspects with their maximum levels, and its
/// instantiation levels with the instances per VDU (the default marked).
pub(crate) fn deployment_summary(v: &Vnfd) -> String {
    let mut s = String::new();
    if v.flavours.is_empty() {
        return s;
    }
    let _ = writeln!(s, "Flavours:");
    for f in &v.flavours {
        if f.description.is_empty() {
            let _ = writeln!(s, "  {}", f.id);
        } else {
            let _ = writeln!(s, "  {}: {}", f.id, f.description);
        }
        let vdus: Vec<String> = f
            .vdus
            .iter()
            .map(|vdu| {
                format!(
                    "{} ({}..{} instances)",
                    vdu.id, vdu.min_instances, vdu.max_instances
                )
            })
            .collect();
        if !vdus.is_empty() {
            let _ = writeln!(s, "    VDUs: {}", vdus.join(", "));
        }
        let aspects: Vec<String> = f
            .scaling_aspects
            .iter()
            .map(|a| format!("{} (max level {})", a.id, a.max_scale_level))
            .collect();
        if !aspects.is_empty() {
            let _ = writeln!(s, "    Scaling aspects: {}", aspects.join(", "));
        }
        if !f.instantiation_levels.is_empty() {
            let _ = writeln!(s, "    Instantiation levels:");
        }
        for l in &f.instantiation_levels {
            let default = if f.default_instantiation_level.as_deref() == Some(&l.id) {
                " (default)"
            } else {
                ""
            };
            let vdus: Vec<String> = l
                .vdu_instances
                .iter()
                .map(|(v, n)| format!("{v}={n}"))
                .collect();
            let _ = writeln!(s, "      {}{default}: {}", l.id, vdus.join(" "));
        }
    }
    s
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Bytes in the unit, binary (`MiB`) or decimal (`MB`), that shows them exactly with the
/// smallest number, e.g. `512 MiB` and `4 GB` (not `3906250 KiB`); the descriptor keeps
/// bytes only, so `4000 MB` as written reads `4 GB`.
fn bytes(n: u64) -> String {
    fn exact(n: u64, base: u64, units: &[&'static str]) -> (u64, &'static str) {
        let mut value = n;
        let mut unit = 0;
        while unit + 1 < units.len() && value >= base && value.is_multiple_of(base) {
            value /= base;
            unit += 1;
        }
        (value, units[unit])
    }
    let binary = exact(n, 1024, &["B", "KiB", "MiB", "GiB", "TiB"]);
    let decimal = exact(n, 1000, &["B", "kB", "MB", "GB", "TB"]);
    // On a tie (`0 B`, or bytes that are in neither unit) the binary unit is kept.
    let (value, unit) = if decimal.0 < binary.0 {
        decimal
    } else {
        binary
    };
    format!("{value} {unit}")
}

#[cfg(test)]
mod tests {
    use super::bytes;

    #[test]
    fn bytes_use_the_largest_exact_unit() {
        assert_eq!(bytes(512 * 1024 * 1024), "512 MiB");
        assert_eq!(bytes(3_000_000_000), "3 GB");
        assert_eq!(bytes(1536), "1536 B");
        assert_eq!(bytes(1_500_000), "1500 kB");
        assert_eq!(bytes(0), "0 B");
    }

    #[test]
    fn memory_of_4000_mb_is_not_shown_as_3906250_kib() {
        assert_eq!(bytes(4000 * 1000 * 1000), "4 GB");
        assert_eq!(bytes(4000 * 1024 * 1024), "4000 MiB");
        assert_eq!(bytes(1_048_576_000), "1000 MiB");
    }
}
