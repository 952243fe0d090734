//! `vnfm package validate` and `vnfm package show`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;
use vnfm::csar::VerifyOptions;
use vnfm::package::{InspectOptions, PackageReport, inspect};

use crate::client::error::ClientError;
use crate::render;
use crate::{CheckOptions, ShowArgs, ValidateArgs};

/// Builds inspection options; an unreadable trusted-root file is a usage error.
fn options(check: &CheckOptions) -> Result<InspectOptions, ClientError> {
    let mut trusted_roots_pem = Vec::new();
    for path in &check.trusted_roots {
        let pem = std::fs::read(path).map_err(|source| ClientError::ReadFile {
            what: "trusted root",
            path: path.clone(),
            source,
        })?;
        trusted_roots_pem.push(pem);
    }
    Ok(InspectOptions {
        verify: VerifyOptions {
            trusted_roots_pem,
            require_signature: check.require_signature,
        },
        strict: check.strict,
        ..InspectOptions::default()
    })
}

/// Exit code 0 when every package is valid, 1 otherwise.
pub(crate) fn validate(args: &ValidateArgs) -> Result<ExitCode, ClientError> {
    let opts = options(&args.check)?;
    let mut invalid = 0usize;
    let mut json_reports = Vec::new();
    let mut out = std::io::stdout().lock();
    // After a failed write nothing more is written, but every package is still checked: the
    // exit code is about all of them.
    let mut written = Ok(());
    for path in &args.packages {
        let report = inspect(path, &opts);
        if !report.is_valid() {
            invalid += 1;
        }
        if args.json {
            json_reports.push(report_json(&path.display().to_string(), &report));
        } else if written.is_ok() {
            written = write!(
                out,
                "{}",
                render::validation_text(&path.display().to_string(), &report)
            );
        }
    }
    if written.is_ok() {
        written = if args.json {
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&json_reports).unwrap_or_default()
            )
        } else if args.packages.len() > 1 {
            let total = args.packages.len();
            writeln!(
                out,
                "{total} packages: {} valid, {invalid} invalid",
                total - invalid
            )
        } else {
            Ok(())
        };
    }
    Ok(exit_code(invalid == 0, written.and_then(|()| out.flush())))
}

/// Exit code 0 when the package is valid, 1 otherwise.
pub(crate) fn show(args: &ShowArgs) -> Result<ExitCode, ClientError> {
    let opts = options(&args.check)?;
    let report = inspect(&args.package, &opts);
    let path = args.package.display().to_string();
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&report_json(&path, &report)).unwrap_or_default()
        )
    } else {
        write!(out, "{}", render::show_text(&path, &report))
    };
    Ok(exit_code(
        report.is_valid(),
        written.and_then(|()| out.flush()),
    ))
}

/// The exit code of a package command whose packages were `valid` and whose output went as
/// `written` says. A reader that went away (`vnfm package validate ... | head`) is not an
/// error: the check ran and its exit code stands. Any other failure to write the report is
/// reported, with exit code 1.
fn exit_code(valid: bool, written: std::io::Result<()>) -> ExitCode {
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("vnfm: cannot write the report to standard output: {e}");
            ExitCode::from(1)
        }
        _ if valid => ExitCode::SUCCESS,
        _ => ExitCode::from(1),
    }
}

fn report_json(path: &str, report: &PackageReport) -> serde_json::Value {
    json!({
        "path": path,
        "valid": report.is_valid(),
        "descriptorId": report.descriptor.as_ref().map(|d| d.id()),
        "descriptor": report.descriptor,
        "diagnostics": report.diagnostics,
    })
}
