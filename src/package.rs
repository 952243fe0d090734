//! Reading a whole VNF package: the CSAR layer, then its descriptor, then checks across both.
//!
//! [`inspect`] is what `vnfm package validate` and package onboarding run: it opens the package
//! (zip or directory) with the archive safety limits, verifies digests and signatures, reads
//! the VNFD or ASD, and cross-checks the manifest's metadata against the descriptor. Every
//! problem ends up in one list of [`Diagnostic`]s; nothing is written anywhere.

use std::path::Path;

use vnfm_csar::{Limits, Package, VerifyOptions};
use vnfm_descriptor::{Descriptor, Diagnostic, Location, Severity};

/// How strictly to check a package.
#[derive(Debug, Clone, Default)]
pub struct InspectOptions {
    /// Archive limits (entries, sizes, compression ratio).
    pub limits: Limits,
    /// Signature verification settings (trusted roots, whether a signature is required).
    pub verify: VerifyOptions,
    /// Treat warnings as errors (e.g. for onboarding policies that refuse incomplete packages).
    pub strict: bool,
}

/// Everything learnt about one package.
#[derive(Debug)]
pub struct PackageReport {
    /// The opened package, when the archive itself could be read.
    pub package: Option<Package>,
    /// The normalized descriptor, when it could be built.
    pub descriptor: Option<Descriptor>,
    /// Every problem found, errors and warnings, in the order found.
    pub diagnostics: Vec<Diagnostic>,
}

impl PackageReport {
    /// True when no diagnostic is an error (and a descriptor was produced).
    pub fn is_valid(&self) -> bool {
        self.descriptor.is_some() && !vnfm_descriptor::diag::has_errors(&self.diagnostics)
    }

    /// Number of diagnostics with the given severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }
}

/// Opens and checks the package at `path` (a CSAR zip file or an unpacked directory).
pub fn inspect(path: &Path, options: &InspectOptions) -> PackageReport {
    match Package::open_with(path, &options.limits) {
        Ok(package) => inspect_package(package, options),
        Err(e) => PackageReport {
            package: None,
            descriptor: None,
            diagnostics: vec![e.to_diagnostic()],
        },
    }
}

/// Checks an already opened package (for example one uploaded over HTTP and opened with
/// [`Package::from_zip_bytes`]).
pub fn inspect_package(package: Package, options: &InspectOptions) -> PackageReport {
    let mut diagnostics: Vec<Diagnostic> = package.diagnostics().to_vec();
    diagnostics.extend(package.verify(&options.verify));
    let loaded = vnfm_tosca::load(&package);
    diagnostics.extend(loaded.diagnostics);
    if let Some(descriptor) = &loaded.descriptor {
        diagnostics.extend(cross_check(&package, descriptor));
    }
    if options.strict {
        for d in &mut diagnostics {
            d.severity = Severity::Error;
        }
    }
    PackageReport {
        package: Some(package),
        descriptor: loaded.descriptor,
        diagnostics,
    }
}

/// Checks that the manifest's metadata agrees with the descriptor (SOL004 clause 4.3.2).
fn cross_check(package: &Package, descriptor: &Descriptor) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let Some(manifest) = package.manifest() else {
        return out;
    };
    let Descriptor::Vnfd(vnfd) = descriptor else {
        return out;
    };
    let pairs = [
        ("vnfd_id", manifest.vnfd_id(), vnfd.descriptor_id.as_str()),
        (
            "vnf_provider_id",
            manifest.vnf_provider_id(),
            vnfd.provider.as_str(),
        ),
        (
            "vnf_product_name",
            manifest.vnf_product_name(),
            vnfd.product_name.as_str(),
        ),
    ];
    for (key, in_manifest, in_vnfd) in pairs {
        if let Some(value) = in_manifest
            && value != in_vnfd
        {
            out.push(
                Diagnostic::warning(
                    "package.manifest-mismatch",
                    format!("manifest metadata `{key}` is `{value}` but the VNFD says `{in_vnfd}`"),
                )
                .at(Location::new(
                    manifest.file.clone(),
                    manifest.metadata_line,
                    0,
                ))
                .with_help("make the manifest metadata match the VNFD's VNF node properties"),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_path_is_one_error_diagnostic() {
        let report = inspect(
            Path::new("/nonexistent/package.zip"),
            &InspectOptions::default(),
        );
        assert!(!report.is_valid());
        assert_eq!(report.count(Severity::Error), 1);
        assert!(report.package.is_none());
    }
}
