//! Onboarding: validation of the content by the package layer, the outcome recorded
//! (`ONBOARDED` + `ENABLED`, or `ERROR` with `onboardingFailureDetails`), the
//! descriptor-derived attributes of the package and the warnings about LCM hooks the server
//! cannot run.

use std::sync::Arc;

use crate::lcm::OnboardedVnfd;
use crate::package::{InspectOptions, inspect_package};
use serde_json::Value;
use vnfm_csar::Package;
use vnfm_descriptor::Descriptor;
use vnfm_lcm::PackageEvent;
use vnfm_store::Version;
use vnfm_types::{
    Checksum, PackageOnboardingState, PackageOperationalState, ProblemDetails,
    VnfPackageArtifactInfo, VnfPackageSoftwareImageInfo, VnfPkgInfo,
};

use crate::lcm::EmbedError;

use super::PackageResult;

use super::{Packages, now, record_of};
use crate::lcm::LocalContent;
use crate::lcm::catalog::open_content;

impl Packages {
    /// Validates the content and records the outcome: `ONBOARDED` + `ENABLED`, or `ERROR`.
    /// The package is read from its local copy on demand, never whole into memory.
    pub(super) async fn onboard(&self, id: &str, content: LocalContent) -> PackageResult<()> {
        let checksum = content.sha256;
        let limits = self.limits.archive.clone();
        let path = content.path;
        let opened = tokio::task::spawn_blocking(move || {
            open_content(&path, &limits).map(|p| inspect_package(p, &InspectOptions::default()))
        })
        .await
        .map_err(|e| EmbedError::OnboardingTask(e.to_string()))?;
        let (mut info, version) = self.get(id).await?;
        info.checksum = Some(Checksum {
            algorithm: "SHA-256".into(),
            hash: checksum,
        });
        let report = match opened {
            Ok(report) => report,
            Err(e) => {
                return self
                    .fail_onboarding(info, version, vec![e.to_diagnostic().to_string()])
                    .await;
            }
        };
        if !report.is_valid() {
            let errors = report
                .diagnostics
                .iter()
                .filter(|d| d.is_error())
                .take(20)
                .map(|d| d.to_string())
                .collect();
            return self.fail_onboarding(info, version, errors).await;
        }
        let (Some(descriptor), Some(package)) = (report.descriptor, report.package) else {
            return self
                .fail_onboarding(
                    info,
                    version,
                    vec!["the package holds no descriptor".into()],
                )
                .await;
        };
        describe(&mut info, &descriptor, &package);
        info.onboarding_state = PackageOnboardingState::Onboarded;
        info.operational_state = PackageOperationalState::Enabled;
        info.links = self.links(id, true, vnfm_types::links::ApiVersion::V2);
        let mut warnings: Vec<String> = report
            .diagnostics
            .iter()
            .filter(|d| !d.is_error())
            .map(|d| d.to_string())
            .collect();
        if let Descriptor::Vnfd(vnfd) = &descriptor {
            warnings.extend(
                hook_warnings(vnfd, self.mgmt.as_deref())
                    .iter()
                    .map(ToString::to_string),
            );
        }
        let warnings_count = warnings.len();
        info.onboarding_warnings = (!warnings.is_empty()).then_some(warnings);
        let notify = self.notify(PackageEvent::Onboarded, &info).await?;
        match self
            .store
            .update_package_and_notify(&record_of(&info)?, version, &notify)
            .await
        {
            Ok(_) => {}
            Err(vnfm_store::StoreError::Conflict(vnfm_store::Conflict::AlreadyExists {
                ..
            })) => {
                let vnfd = info.vnfd_id.clone().unwrap_or_default();
                info.vnfd_id = None;
                info.links = self.links(id, false, vnfm_types::links::ApiVersion::V2);
                return self
                    .fail_onboarding(
                        info,
                        version,
                        vec![format!(
                            "another VNF package already has vnfdId {vnfd}: delete it, or change the VNFD's descriptor_id"
                        )],
                    )
                    .await;
            }
            Err(e) => return Err(e.into()),
        }
        if let Descriptor::Vnfd(vnfd) = descriptor {
            let vnfd_id = vnfd.descriptor_id.clone();
            self.catalog.cache().insert_onboarded(OnboardedVnfd {
                vnfd: Arc::new(*vnfd),
                files: crate::lcm::package_files(package),
            });
            self.remember(&vnfd_id, id);
        }
        tracing::info!(package = %id, warnings = warnings_count, "VNF package onboarded");
        Ok(())
    }

    pub(super) async fn fail_onboarding(
        &self,
        mut info: VnfPkgInfo,
        version: Version,
        errors: Vec<String>,
    ) -> PackageResult<()> {
        let mut details = ProblemDetails::new(
            422,
            format!("the VNF package is invalid: {}", errors.join("; ")),
        );
        details.title = Some("VNF package onboarding failed".into());
        details
            .extra
            .insert("diagnostics".into(), Value::from(errors));
        info.onboarding_state = PackageOnboardingState::Error;
        // A package that did not onboard serves nothing: DISABLED, so it can be deleted (the
        // vnfdId conflict is found after the state was set to ENABLED).
        info.operational_state = PackageOperationalState::Disabled;
        info.onboarding_failure_details = Some(details);
        self.store
            .update_package(&record_of(&info)?, version)
            .await?;
        Ok(())
    }
}

/// Fills the descriptor-derived attributes of `info`.
fn describe(info: &mut VnfPkgInfo, descriptor: &Descriptor, package: &Package) {
    let created = now();
    match descriptor {
        Descriptor::Vnfd(vnfd) => {
            info.vnfd_id = Some(vnfd.descriptor_id.clone());
            info.vnf_provider = Some(vnfd.provider.clone());
            info.vnf_product_name = Some(vnfd.product_name.clone());
            info.vnf_software_version = Some(vnfd.software_version.clone());
            info.vnfd_version = Some(vnfd.descriptor_version.clone());
            if !vnfd.vnfm_info.is_empty() {
                info.vnfm_info = Some(vnfd.vnfm_info.clone());
            }
            if let Some(v) = &vnfd.sol001_version {
                info.compatible_specification_versions = Some(vec![v.clone()]);
            }
            let mut images = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for flavour in &vnfd.flavours {
                let from_vdus = flavour
                    .vdus
                    .iter()
                    .filter_map(|v| v.sw_image.as_ref().map(|i| (v.id.clone(), i)));
                let from_storage = flavour
                    .virtual_storages
                    .iter()
                    .filter_map(|s| s.sw_image.as_ref().map(|i| (s.id.clone(), i)));
                for (id, image) in from_vdus.chain(from_storage) {
                    if !seen.insert(id.clone()) {
                        continue;
                    }
                    images.push(VnfPackageSoftwareImageInfo {
                        id,
                        name: image.name.clone(),
                        provider: vnfd.provider.clone(),
                        version: image.version.clone(),
                        checksum: Checksum {
                            algorithm: image.checksum_algorithm.clone().unwrap_or_default(),
                            hash: image.checksum_hash.clone().unwrap_or_default(),
                        },
                        is_encrypted: None,
                        container_format: image
                            .container_format
                            .clone()
                            .unwrap_or_default()
                            .to_uppercase(),
                        disk_format: image.disk_format.clone().unwrap_or_default().to_uppercase(),
                        created_at: created.clone(),
                        min_disk: image.min_disk_bytes.unwrap_or(0),
                        min_ram: image.min_ram_bytes.unwrap_or(0),
                        size: image.size_bytes.unwrap_or(0),
                        image_path: image.file.clone().unwrap_or_default(),
                        image_uri: None,
                        user_metadata: None,
                    });
                }
            }
            info.software_images = Some(images);
        }
        Descriptor::Asd(asd) => {
            info.vnfd_id = Some(asd.asd_id.clone());
            info.vnf_provider = Some(asd.provider.clone());
            info.vnf_product_name = Some(asd.application_name.clone());
            info.vnf_software_version = Some(asd.application_version.clone());
            info.vnfd_version = Some(asd.asd_version.clone());
            info.software_images = Some(Vec::new());
        }
    }
    let image_paths: std::collections::HashSet<String> = info
        .software_images
        .iter()
        .flatten()
        .map(|i| i.image_path.clone())
        .collect();
    if let Some(manifest) = package.manifest() {
        let mut artifacts = Vec::new();
        for a in &manifest.artifacts {
            let path = a.source.value.clone();
            if image_paths.contains(&path) {
                continue;
            }
            let external = path.contains("://");
            artifacts.push(VnfPackageArtifactInfo {
                artifact_path: if external {
                    String::new()
                } else {
                    path.clone()
                },
                artifact_uri: external.then(|| path.clone()),
                checksum: Checksum {
                    algorithm: a
                        .algorithm
                        .as_ref()
                        .map(|f| f.value.clone())
                        .unwrap_or_default(),
                    hash: a
                        .hash
                        .as_ref()
                        .map(|f| f.value.to_ascii_lowercase())
                        .unwrap_or_default(),
                },
                is_encrypted: None,
                metadata: None,
            });
        }
        info.additional_artifacts = Some(artifacts);
        if manifest.signature.is_some() {
            info.package_security_option = Some("OPTION_1".into());
        }
    }
    if let Some(cert) = &package.meta().etsi_entry_certificate
        && let Ok(bytes) = package.read(&cert.value)
        && let Ok(text) = String::from_utf8(bytes)
    {
        info.signing_certificate = Some(text);
    }
}

/// Warnings (`package.hook-not-runnable`) for the LCM hooks of `vnfd` that `mgmt` cannot
/// run, one per flavour and artifact: without them a package whose hooks need a management
/// driver the server lacks onboards silently and fails only when an operation reaches the
/// hook (with 422).
fn hook_warnings(
    vnfd: &vnfm_descriptor::Vnfd,
    mgmt: Option<&dyn crate::lcm::MgmtDriver>,
) -> Vec<vnfm_descriptor::Diagnostic> {
    let mut out = Vec::new();
    for flavour in &vnfd.flavours {
        // Hooks by artifact, in the order the VNFD binds them.
        let mut by_artifact: Vec<(&str, Vec<&str>)> = Vec::new();
        for hook in &flavour.lcm_hooks {
            match by_artifact.iter_mut().find(|(a, _)| *a == hook.artifact) {
                Some((_, ops)) => ops.push(&hook.operation),
                None => by_artifact.push((&hook.artifact, vec![&hook.operation])),
            }
        }
        for (name, operations) in by_artifact {
            // An undeclared artifact is already an error of the descriptor.
            let Some(a) = flavour.artifact(None, name) else {
                continue;
            };
            let artifact = vnfm_driver_api::HookArtifact {
                name: a.name.clone(),
                file: a.file.clone(),
                artifact_type: a.artifact_type.clone(),
                sha256: a.sha256.clone(),
                external: a.external,
                dependencies: Vec::new(),
            };
            let reason = match mgmt {
                None => Some("this server runs no management driver".to_owned()),
                Some(m) => m.cannot_run(&artifact),
            };
            let Some(reason) = reason else {
                continue;
            };
            let hooks = operations
                .iter()
                .map(|o| format!("`{o}`"))
                .collect::<Vec<_>>()
                .join(", ");
            out.push(
                vnfm_descriptor::Diagnostic::warning(
                    "package.hook-not-runnable",
                    format!(
                        "hook{} {hooks} of flavour `{}` need{} management driver artifact `{name}` ({}), which this server cannot run: {reason}",
                        if operations.len() == 1 { "" } else { "s" },
                        flavour.id,
                        if operations.len() == 1 { "s" } else { "" },
                        a.file,
                    ),
                )
                .with_help(format!(
                    "the operations that reach {} fail with 422 until the server runs it: start vnfm serve with --plugin {name}=LIBRARY, or with --package-plugins for a library in the package",
                    if operations.len() == 1 { "it" } else { "them" },
                )),
            );
        }
    }
    out
}
