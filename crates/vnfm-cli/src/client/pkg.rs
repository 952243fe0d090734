//! `vnfm pkg`: upload (zipping a directory), list, show, enable, disable, delete.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Value, json};

use super::Ctx;
use super::error::ClientError;
use super::http::Body;
use super::output::{self, Table, fields, s};
use super::vnf::{KeyValue, key_values};

/// `vnfm pkg ...`.
#[derive(Debug, Subcommand)]
pub enum PkgCommand {
    /// Upload a package (a CSAR zip file, or a directory that is zipped first) and wait for
    /// onboarding; prints the diagnostics when the package is refused.
    Upload(UploadArgs),
    /// List the packages.
    List,
    /// Show one package.
    Show {
        /// Package id.
        id: String,
    },
    /// Allow new VNF instances from the package.
    Enable {
        /// Package id.
        id: String,
    },
    /// Refuse new VNF instances from the package.
    Disable {
        /// Package id.
        id: String,
    },
    /// Delete a package (it must be DISABLED and not in use).
    Delete {
        /// Package id.
        id: String,
        /// Disable it first when it is ENABLED.
        #[arg(long)]
        force: bool,
    },
}

/// `vnfm pkg upload`.
#[derive(Debug, Args)]
pub struct UploadArgs {
    /// The CSAR file or package directory.
    #[arg(value_name = "CSAR|DIR")]
    pub path: PathBuf,
    /// `userDefinedData` member as KEY=VALUE (VALUE is JSON when it parses, else a string;
    /// repeatable).
    #[arg(long = "user-data", value_name = "KEY=VALUE")]
    pub user_data: Vec<KeyValue>,
    /// Return once the content is accepted, without waiting for onboarding.
    #[arg(long)]
    pub no_wait: bool,
    /// Give up waiting for onboarding after this many seconds.
    #[arg(long, default_value_t = 600, value_name = "SECONDS")]
    pub timeout: u64,
}

/// The zip archive of a package directory ([`vnfm::csar::zip_directory`]).
pub fn zip_dir(dir: &Path) -> Result<Vec<u8>, ClientError> {
    vnfm::csar::zip_directory(dir).map_err(|e| match e {
        vnfm::csar::CsarError::Io { path, source } => ClientError::ReadFile {
            what: "package directory",
            path: PathBuf::from(path),
            source,
        },
        other => ClientError::BadFile {
            what: "package directory",
            path: dir.to_owned(),
            message: other.to_string(),
        },
    })
}

fn pkg_row(p: &Value) -> Vec<String> {
    vec![
        s(p, "/id"),
        s(p, "/vnfdId"),
        s(p, "/vnfProductName"),
        s(p, "/vnfSoftwareVersion"),
        s(p, "/onboardingState"),
        s(p, "/operationalState"),
        s(p, "/usageState"),
    ]
}

/// The strings of the array at `pointer` (empty when there is none).
fn strings<'a>(p: &'a Value, pointer: &str) -> Vec<&'a str> {
    p.pointer(pointer)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// A titled list of diagnostics, each line indented (a diagnostic's help is on a line of its
/// own).
fn diagnostics_text(title: &str, items: &[&str]) -> String {
    let mut text = String::new();
    if items.is_empty() {
        return text;
    }
    text.push_str(title);
    text.push_str(":\n");
    for item in items {
        for (i, line) in item.lines().enumerate() {
            text.push_str(if i == 0 { "  " } else { "    " });
            text.push_str(line.trim_start());
            text.push('\n');
        }
    }
    text
}

/// The package for people: its attributes, `summary` (of its VNFD), then the onboarding
/// warnings and, when onboarding failed, why.
fn pkg_fields(p: &Value, summary: &str) -> String {
    let mut text = pkg_attributes(p, true);
    text.push_str(summary);
    text.push_str(&diagnostics_text(
        "Warnings",
        &strings(p, "/onboardingWarnings"),
    ));
    text.push_str(&diagnostics_text(
        "Diagnostics",
        &strings(p, "/onboardingFailureDetails/diagnostics"),
    ));
    text
}

/// The package's attributes, one per line; `failure` adds the failure detail.
fn pkg_attributes(p: &Value, failure: bool) -> String {
    fields(&[
        ("ID", s(p, "/id")),
        ("VNFD", s(p, "/vnfdId")),
        ("Provider", s(p, "/vnfProvider")),
        ("Product", s(p, "/vnfProductName")),
        ("Software version", s(p, "/vnfSoftwareVersion")),
        ("VNFD version", s(p, "/vnfdVersion")),
        ("Onboarding", s(p, "/onboardingState")),
        ("Operational", s(p, "/operationalState")),
        ("Usage", s(p, "/usageState")),
        ("Checksum", s(p, "/checksum/hash")),
        ("Artifacts", {
            let n = output::count(p, "/additionalArtifacts");
            if n == 0 { String::new() } else { n.to_string() }
        }),
        ("User data", output::compact(p, "/userDefinedData")),
        ("Failure", {
            // The detail repeats the diagnostics; it is shown when they are missing.
            if failure && strings(p, "/onboardingFailureDetails/diagnostics").is_empty() {
                s(p, "/onboardingFailureDetails/detail")
            } else {
                String::new()
            }
        }),
    ])
}

async fn upload(ctx: &Ctx, a: UploadArgs) -> Result<(), ClientError> {
    let content = if a.path.is_dir() {
        zip_dir(&a.path)?
    } else {
        std::fs::read(&a.path).map_err(|source| ClientError::ReadFile {
            what: "package",
            path: a.path.clone(),
            source,
        })?
    };
    let api = ctx.api()?;
    let mut create = json!({});
    if !a.user_data.is_empty() {
        create["userDefinedData"] = key_values(&a.user_data);
    }
    let created = api
        .call(Method::POST, "/vnfpkgm/v2/vnf_packages", Body::Json(create))
        .await?
        .body;
    let id = s(&created, "/id");
    if id.is_empty() {
        return Err(ClientError::Unexpected {
            what: "POST /vnfpkgm/v2/vnf_packages".into(),
            message: "the created package has no id".into(),
        });
    }
    let path = format!("/vnfpkgm/v2/vnf_packages/{}", super::seg(&id));
    api.call(
        Method::PUT,
        &format!("{path}/package_content"),
        Body::Zip(content),
    )
    .await?;
    if a.no_wait {
        let info = api.get(&path).await?;
        return output::print(ctx.format, &info, |p| pkg_fields(p, ""));
    }
    let start = Instant::now();
    let mut delay = Duration::from_millis(100);
    let info = loop {
        let info = api.get(&path).await?;
        let state = s(&info, "/onboardingState");
        if state == "ONBOARDED" || state == "ERROR" {
            break info;
        }
        if start.elapsed() >= Duration::from_secs(a.timeout) {
            return Err(ClientError::Timeout {
                what: format!("the onboarding of package {id}"),
                seconds: a.timeout,
            });
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    };
    // The warnings and the errors go to standard error, once each, whatever the format: the
    // table on standard output has the package's attributes only.
    output::print(ctx.format, &info, |p| pkg_attributes(p, false))?;
    for w in strings(&info, "/onboardingWarnings") {
        eprintln!("{}", warning_line(w));
    }
    if s(&info, "/onboardingState") == "ERROR" {
        return Err(ClientError::OnboardingFailed {
            id,
            detail: s(&info, "/onboardingFailureDetails/detail"),
            diagnostics: strings(&info, "/onboardingFailureDetails/diagnostics")
                .into_iter()
                .map(str::to_owned)
                .collect(),
        });
    }
    Ok(())
}

/// An onboarding warning for standard error: `warning: ` first (unless the text starts with
/// its location), its help indented on the next line.
fn warning_line(w: &str) -> String {
    let mut out = String::new();
    for (i, line) in w.lines().enumerate() {
        if i == 0 {
            if !line.contains("warning[") {
                out.push_str("warning: ");
            }
        } else {
            out.push_str("\n    ");
        }
        out.push_str(line.trim_start());
    }
    out
}

/// The flavours, scaling aspects and instantiation levels of the package's VNFD, read from
/// `GET {path}/vnfd` (the VNFD files as a zip archive).
async fn vnfd_summary(api: &super::http::Api, path: &str) -> Result<String, ClientError> {
    let bytes = api
        .get_bytes(&format!("{path}/vnfd"), "application/zip")
        .await?;
    let unusable = |message: String| ClientError::Unexpected {
        what: format!("GET {path}/vnfd"),
        message,
    };
    let files = vnfm::csar::Package::from_zip_bytes(bytes, &vnfm::csar::Limits::default())
        .map_err(|e| unusable(format!("the VNFD archive cannot be opened: {e}")))?;
    // The archive holds the descriptor files only, so the package-level checks (manifest,
    // artifacts) would only find what is left out: the descriptor is all that is read.
    match vnfm::tosca::load(&files).descriptor {
        Some(vnfm::descriptor::Descriptor::Vnfd(vnfd)) => {
            Ok(crate::render::deployment_summary(&vnfd))
        }
        Some(vnfm::descriptor::Descriptor::Asd(_)) => Ok(String::new()),
        None => Err(unusable("the VNFD cannot be read".into())),
    }
}

async fn set_state(ctx: &Ctx, id: &str, state: &str) -> Result<Value, ClientError> {
    let api = ctx.api()?;
    Ok(api
        .call(
            Method::PATCH,
            &format!("/vnfpkgm/v2/vnf_packages/{}", super::seg(id)),
            Body::MergePatch(json!({"operationalState": state})),
        )
        .await?
        .body)
}

/// Runs a `vnfm pkg` command.
pub async fn run(ctx: &Ctx, cmd: PkgCommand) -> Result<(), ClientError> {
    match cmd {
        PkgCommand::Upload(a) => upload(ctx, a).await,
        PkgCommand::List => {
            let list = Value::Array(ctx.api()?.list("/vnfpkgm/v2/vnf_packages", &[]).await?);
            output::print(ctx.format, &list, |v| {
                let mut t = Table::new(&[
                    "ID",
                    "VNFD ID",
                    "PRODUCT",
                    "VERSION",
                    "ONBOARDING",
                    "OPERATIONAL",
                    "USAGE",
                ]);
                for p in v.as_array().into_iter().flatten() {
                    t.row(pkg_row(p));
                }
                t.render()
            })
        }
        PkgCommand::Show { id } => {
            let api = ctx.api()?;
            let path = format!("/vnfpkgm/v2/vnf_packages/{}", super::seg(&id));
            let info = api.get(&path).await?;
            // The deployment summary comes from the onboarded VNFD (for people only: the
            // JSON and YAML views are the server's resource).
            let summary = if ctx.format == super::config::OutputFormat::Table
                && s(&info, "/onboardingState") == "ONBOARDED"
            {
                match vnfd_summary(api, &path).await {
                    Ok(text) => text,
                    Err(e) => format!("Flavours: not shown ({e})\n"),
                }
            } else {
                String::new()
            };
            output::print(ctx.format, &info, |p| pkg_fields(p, &summary))
        }
        PkgCommand::Enable { id } => {
            let m = set_state(ctx, &id, "ENABLED").await?;
            ctx.done(&format!("package {id} ENABLED"), m)
        }
        PkgCommand::Disable { id } => {
            let m = set_state(ctx, &id, "DISABLED").await?;
            ctx.done(&format!("package {id} DISABLED"), m)
        }
        PkgCommand::Delete { id, force } => {
            let api = ctx.api()?;
            let path = format!("/vnfpkgm/v2/vnf_packages/{}", super::seg(&id));
            if force {
                let info = api.get(&path).await?;
                if s(&info, "/operationalState") == "ENABLED" {
                    set_state(ctx, &id, "DISABLED").await?;
                }
            }
            api.call(Method::DELETE, &path, Body::Empty).await?;
            ctx.done(
                &format!("package {id} deleted"),
                json!({"id": id, "deleted": true}),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    #[test]
    fn zipped_directory_keeps_relative_paths_and_content() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("TOSCA-Metadata")).unwrap();
        std::fs::write(dir.path().join("TOSCA-Metadata/TOSCA.meta"), "meta").unwrap();
        std::fs::write(dir.path().join("a.yaml"), "a: 1").unwrap();
        let bytes = zip_dir(dir.path()).unwrap();
        let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
        let mut names: Vec<String> = z.file_names().map(|n| n.unwrap().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["TOSCA-Metadata/TOSCA.meta", "a.yaml"]);
        let mut text = String::new();
        z.by_name("TOSCA-Metadata/TOSCA.meta")
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "meta");
    }

    #[test]
    fn missing_directory_is_a_read_error() {
        let e = zip_dir(Path::new("/nonexistent/pkg")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
