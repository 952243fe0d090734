//! The REST client subcommands (`pkg`, `vim`, `vnf`, `op`, `sub`, `alarm`, `pm`): they talk to a running
//! `vnfm serve` over its API. Connection settings come from [`config`], requests go through
//! the one HTTP seam in [`http`], results are printed by [`output`].

use std::process::ExitCode;
use std::sync::OnceLock;

use clap::Args;
use serde_json::Value;

pub mod alarm;
pub mod config;
pub mod error;
pub mod export;
pub mod http;
pub mod indicator;
pub mod op;
pub mod openstack_auth;
pub mod output;
pub mod pkg;
pub mod pm;
pub mod progress;
pub mod sub;
pub mod timeline;
pub mod vim;
pub mod vnf;

use config::{ClientArgs, OutputFormat};
use error::ClientError;
use http::Api;

/// `vnfm pkg`: VNF packages on the server.
#[derive(Debug, Args)]
pub struct PkgGroup {
    #[command(flatten)]
    pub(crate) conn: ClientArgs,
    #[command(subcommand)]
    cmd: pkg::PkgCommand,
}

/// `vnfm vim`: VIMs registered with the server.
#[derive(Debug, Args)]
pub struct VimGroup {
    #[command(flatten)]
    pub(crate) conn: ClientArgs,
    #[command(subcommand)]
    cmd: vim::VimCommand,
}

/// `vnfm vnf`: VNF instances and their lifecycle operations.
#[derive(Debug, Args)]
pub struct VnfGroup {
    #[command(flatten)]
    pub(crate) conn: ClientArgs,
    #[command(subcommand)]
    cmd: vnf::VnfCommand,
}

/// `vnfm op`: lifecycle operation occurrences.
#[derive(Debug, Args)]
pub struct OpGroup {
    #[command(flatten)]
    pub(crate) conn: ClientArgs,
    #[command(subcommand)]
    cmd: op::OpCommand,
}

/// `vnfm sub`: notification subscriptions.
#[derive(Debug, Args)]
pub struct SubGroup {
    #[command(flatten)]
    pub(crate) conn: ClientArgs,
    #[command(subcommand)]
    cmd: sub::SubCommand,
}

/// `vnfm alarm`: VNF alarms.
#[derive(Debug, Args)]
pub struct AlarmGroup {
    #[command(flatten)]
    pub(crate) conn: ClientArgs,
    #[command(subcommand)]
    cmd: alarm::AlarmCommand,
}

/// `vnfm indicator`: VNF indicator values.
#[derive(Debug, Args)]
pub struct IndicatorGroup {
    #[command(flatten)]
    pub(crate) conn: ClientArgs,
    #[command(subcommand)]
    cmd: indicator::IndicatorCommand,
}

/// `vnfm pm`: VNF performance management.
#[derive(Debug, Args)]
pub struct PmGroup {
    #[command(flatten)]
    pub(crate) conn: ClientArgs,
    #[command(subcommand)]
    cmd: pm::PmCommand,
}

/// A client command with its connection options.
#[derive(Debug)]
pub enum Group {
    /// `vnfm pkg`.
    Pkg(PkgGroup),
    /// `vnfm vim`.
    Vim(VimGroup),
    /// `vnfm vnf`.
    Vnf(VnfGroup),
    /// `vnfm op`.
    Op(OpGroup),
    /// `vnfm sub`.
    Sub(SubGroup),
    /// `vnfm alarm`.
    Alarm(AlarmGroup),
    /// `vnfm pm`.
    Pm(PmGroup),
    /// `vnfm indicator`.
    Indicator(IndicatorGroup),
}

/// What every command needs: the output format and (built on first use) the API client.
pub struct Ctx {
    args: ClientArgs,
    /// How to print results.
    pub format: OutputFormat,
    api: OnceLock<Api>,
}

impl Ctx {
    fn new(args: ClientArgs) -> Ctx {
        Ctx {
            format: args.output,
            args,
            api: OnceLock::new(),
        }
    }

    /// The API client; settings errors surface on first use, so commands that need no
    /// server (`--dry-run`) work without credentials.
    pub fn api(&self) -> Result<&Api, ClientError> {
        if let Some(a) = self.api.get() {
            return Ok(a);
        }
        let api = Api::new(self.args.settings()?)?;
        Ok(self.api.get_or_init(|| api))
    }

    /// Reports a completed action: `message` for people, `doc` for scripts.
    pub fn done(&self, message: &str, doc: Value) -> Result<(), ClientError> {
        output::print(self.format, &doc, |_| format!("{message}\n"))
    }
}

/// Every byte but RFC 3986's unreserved characters.
const NOT_UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One URL path segment with reserved characters percent-encoded.
pub fn seg(s: &str) -> String {
    // `.` and `..` would be resolved away by URL normalization.
    if s == "." || s == ".." {
        return s.replace('.', "%2E");
    }
    percent_encoding::utf8_percent_encode(s, NOT_UNRESERVED).to_string()
}

/// Prints an error for people: the message, then the ProblemDetails members beyond
/// status/title/detail (e.g. `pointer`, `diagnostics`).
fn report(e: &ClientError) {
    eprintln!("vnfm: error: {e}");
    if let Some(Value::Object(m)) = e.problem().map(|p| &p.raw) {
        for (k, v) in m {
            if matches!(
                k.as_str(),
                "type" | "title" | "status" | "detail" | "instance" | "pointer"
            ) {
                continue;
            }
            match v {
                Value::Array(items) => {
                    eprintln!("  {k}:");
                    for i in items {
                        match i {
                            Value::String(s) => eprintln!("    - {s}"),
                            other => eprintln!("    - {other}"),
                        }
                    }
                }
                Value::String(s) => eprintln!("  {k}: {s}"),
                other => eprintln!("  {k}: {other}"),
            }
        }
    }
}

/// Runs a client command to completion and returns the process exit code.
pub fn run(group: Group) -> ExitCode {
    rustls::crypto::ring::default_provider()
        .install_default()
        .ok();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vnfm: error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = runtime.block_on(async move {
        match group {
            Group::Pkg(g) => pkg::run(&Ctx::new(g.conn), g.cmd).await,
            Group::Vim(g) => vim::run(&Ctx::new(g.conn), g.cmd).await,
            Group::Vnf(g) => vnf::run(&Ctx::new(g.conn), g.cmd).await,
            Group::Op(g) => op::run(&Ctx::new(g.conn), g.cmd).await,
            Group::Sub(g) => sub::run(&Ctx::new(g.conn), g.cmd).await,
            Group::Alarm(g) => alarm::run(&Ctx::new(g.conn), g.cmd).await,
            Group::Pm(g) => pm::run(&Ctx::new(g.conn), g.cmd).await,
            Group::Indicator(g) => indicator::run(&Ctx::new(g.conn), g.cmd).await,
        }
    });
    // Background work (a watch's callback server) must not keep the process alive.
    runtime.shutdown_background();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            report(&e);
            ExitCode::from(e.exit_code())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_segments_are_encoded() {
        assert_eq!(seg("abc-1_2.3~"), "abc-1_2.3~");
        assert_eq!(seg("a/b c?"), "a%2Fb%20c%3F");
        assert_eq!(seg("../x"), "..%2Fx");
        assert_eq!(seg(".."), "%2E%2E");
        assert_eq!(seg("é%"), "%C3%A9%25");
    }
}
