//! `vnfm`: the VNF Manager's command-line program.
//!
//! One program runs every command: the offline package commands (`package validate`,
//! `package show`), the SOL003 REST server (`serve`), the client commands that talk to a
//! running server (`pkg`, `vim`, `vnf`, `op`, `sub`), shell completion (`completion`), and the
//! hidden `plugin-runner`, which `serve` starts for each hook call of a plugin run in its own
//! process. [`main`] parses the command line with clap and runs the command.
//!
//! Exit codes: 0 success, 1 the command ran but found a problem (e.g. an invalid package, a
//! request the server refused, an operation that ended in FAILED_TEMP/FAILED/ROLLED_BACK),
//! 2 usage error (unknown option, missing argument, unreadable option file), 3 the server
//! could not be reached or refused the credentials, 4 `--timeout` expired.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

mod client;
mod package_cmd;
mod render;
mod serve_cmd;
mod serve_error;
mod serve_keystone;
mod serve_oauth;
mod serve_otel;

/// ETSI NFV SOL-compliant VNF Manager.
#[derive(Debug, Parser)]
#[command(name = "vnfm", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Work with VNF packages (SOL004 CSAR) and their descriptors (SOL001 VNFD, ASD).
    #[command(subcommand)]
    Package(PackageCommand),
    /// Run the SOL003 REST server (VNF LCM v2/v1, package management, subscriptions, VIMs).
    ///
    /// With no options it runs on the embedded defaults: an SQLite store, key files and a
    /// bootstrap OAuth 2.0 client in the data directory, listening on 127.0.0.1:9890.
    Serve(Box<serve_cmd::ServeArgs>),
    /// Client: VNF packages on a running server (upload, list, show, enable, disable, delete).
    #[command(name = "pkg")]
    Pkg(client::PkgGroup),
    /// Client: VIMs registered with a running server (register from Tacker vim-config.yaml,
    /// list, show, delete).
    Vim(client::VimGroup),
    /// Client: VNF instances and their lifecycle (create, instantiate, scale, heal, terminate, ...).
    Vnf(client::VnfGroup),
    /// Client: lifecycle operation occurrences (list, show, retry, rollback, fail, cancel, watch).
    Op(client::OpGroup),
    /// Client: notification subscriptions (create, list, show, delete) and the notifications
    /// given up on (dead, redeliver, discard).
    Sub(client::SubGroup),
    /// Client: VNF alarms (list with filters, show, acknowledge).
    Alarm(client::AlarmGroup),
    /// Client: VNF performance management (PM jobs and thresholds: list, show, create, delete).
    Pm(client::PmGroup),
    /// Client: VNF indicator values (list, show).
    Indicator(client::IndicatorGroup),
    /// Runs one hook call of a plugin library for `vnfm serve` (the isolated plugin runner:
    /// messages on stdin and stdout). Not meant to be started by hand.
    #[command(name = "plugin-runner", hide = true)]
    PluginRunner {
        /// The plugin library.
        library: PathBuf,
    },
    /// Print a shell completion script (e.g. `vnfm completion bash > /etc/bash_completion.d/vnfm`).
    Completion {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Subcommand)]
enum PackageCommand {
    /// Check one or more packages (zip files or unpacked directories).
    ///
    /// Exit code 0 when every package is valid, 1 when any is invalid, 2 on usage errors.
    Validate(ValidateArgs),
    /// Print a readable summary of a package: flavours, VDUs, hooks, scaling, artifacts.
    Show(ShowArgs),
}

/// Options shared by the package commands.
#[derive(Debug, Args)]
struct CheckOptions {
    /// Treat warnings as errors.
    #[arg(long)]
    strict: bool,
    /// PEM file with a trusted root certificate for package signatures (repeatable).
    #[arg(long = "trusted-root", value_name = "PEM")]
    trusted_roots: Vec<PathBuf>,
    /// Refuse packages that carry no signature.
    #[arg(long)]
    require_signature: bool,
}

#[derive(Debug, Args)]
struct ValidateArgs {
    /// Packages to check: CSAR zip files or unpacked package directories.
    #[arg(required = true, value_name = "PACKAGE")]
    packages: Vec<PathBuf>,
    /// Print one JSON document (an array with one report per package) instead of text.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    check: CheckOptions,
}

#[derive(Debug, Args)]
struct ShowArgs {
    /// The package: a CSAR zip file or an unpacked package directory.
    #[arg(value_name = "PACKAGE")]
    package: PathBuf,
    /// Print the normalized descriptor as JSON instead of the summary.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    check: CheckOptions,
}

/// The command line `args` (the program name first) with the client's connection and output
/// options given before the subcommand (`vnfm --os-cloud demo vim list`, as docs/cli.md
/// shows) moved behind the subcommand's name, where the client command groups take them
/// (`vnfm vim --os-cloud demo list`). The options are those clap defines for
/// [`client::config::ClientArgs`]; anything else before the subcommand stops the move, and a
/// command line without a subcommand after them is left as it is for clap to refuse.
fn with_connection_options_after_the_subcommand(args: Vec<OsString>) -> Vec<OsString> {
    let options = client::config::ClientArgs::augment_args(clap::Command::new("connection"));
    // The option a token names, and whether it takes its value from the next token.
    let option = |token: &str| -> Option<bool> {
        let takes_value = |a: &clap::Arg| a.get_action().takes_values();
        if let Some(long) = token.strip_prefix("--") {
            let (name, inline) = long
                .split_once('=')
                .map_or((long, false), |(name, _)| (name, true));
            let arg = options
                .get_arguments()
                .find(|a| a.get_long() == Some(name))?;
            Some(takes_value(arg) && !inline)
        } else {
            let mut chars = token.strip_prefix('-')?.chars();
            let short = chars.next()?;
            let arg = options
                .get_arguments()
                .find(|a| a.get_short() == Some(short))?;
            Some(takes_value(arg) && chars.as_str().is_empty())
        }
    };
    let mut moved = Vec::new();
    let mut i = 1;
    while let Some(token) = args.get(i).and_then(|t| t.to_str()) {
        let Some(value_follows) = option(token) else {
            break;
        };
        let end = (i + 1 + usize::from(value_follows)).min(args.len());
        moved.extend_from_slice(&args[i..end]);
        i = end;
    }
    if moved.is_empty() || i >= args.len() {
        return args;
    }
    let mut out = Vec::with_capacity(args.len());
    out.push(args[0].clone());
    out.push(args[i].clone());
    out.extend(moved);
    out.extend_from_slice(&args[i + 1..]);
    out
}

/// Runs the command line of this process; returns its exit code.
pub fn main() -> ExitCode {
    let args = with_connection_options_after_the_subcommand(std::env::args_os().collect());
    match Cli::parse_from(args).command {
        Command::Package(command) => finish(run_package(command)),
        Command::Serve(args) => finish(serve_cmd::run(*args)),
        Command::Pkg(g) => client::run(client::Group::Pkg(g)),
        Command::Vim(g) => client::run(client::Group::Vim(g)),
        Command::Vnf(g) => client::run(client::Group::Vnf(g)),
        Command::Op(g) => client::run(client::Group::Op(g)),
        Command::Sub(g) => client::run(client::Group::Sub(g)),
        Command::Alarm(g) => client::run(client::Group::Alarm(g)),
        Command::Pm(g) => client::run(client::Group::Pm(g)),
        Command::Indicator(g) => client::run(client::Group::Indicator(g)),
        Command::PluginRunner { library } => vnfm_plugin_host::runner::run(&library),
        Command::Completion { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "vnfm", &mut std::io::stdout());
            ExitCode::SUCCESS
        }
    }
}

fn run_package(command: PackageCommand) -> Result<ExitCode, client::error::ClientError> {
    match command {
        PackageCommand::Validate(args) => package_cmd::validate(&args),
        PackageCommand::Show(args) => package_cmd::show(&args),
    }
}

/// The exit code of a command, or 2 after printing its usage error.
fn finish<E: std::fmt::Display>(result: Result<ExitCode, E>) -> ExitCode {
    result.unwrap_or_else(|usage| {
        eprintln!("vnfm: {usage}");
        ExitCode::from(2)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    fn parsed(line: &[&str]) -> Result<Cli, clap::Error> {
        let args = line.iter().map(OsString::from).collect();
        Cli::try_parse_from(with_connection_options_after_the_subcommand(args))
    }

    /// `vnfm --os-cloud NAME vim list`, the form docs/cli.md shows, was a usage error: the
    /// connection options were taken only after the subcommand.
    #[test]
    fn connection_options_before_the_subcommand_are_taken() {
        let cli = parsed(&["vnfm", "--os-cloud", "demo", "vim", "list"]).unwrap();
        let Command::Vim(group) = cli.command else {
            panic!("not vim");
        };
        assert_eq!(group.conn.os_cloud.as_deref(), Some("demo"));
        let cli = parsed(&[
            "vnfm",
            "--url=http://vnfm:9890",
            "--no-token-cache",
            "-o",
            "json",
            "--client-id",
            "c",
            "sub",
            "list",
        ])
        .unwrap();
        let Command::Sub(group) = cli.command else {
            panic!("not sub");
        };
        let conn = group.conn;
        assert_eq!(conn.url.as_deref(), Some("http://vnfm:9890"));
        assert!(conn.no_token_cache);
        assert_eq!(conn.output, client::config::OutputFormat::Json);
        assert_eq!(conn.client_id.as_deref(), Some("c"));
        let cli = parsed(&["vnfm", "-oyaml", "vnf", "list"]).unwrap();
        let Command::Vnf(group) = cli.command else {
            panic!("not vnf");
        };
        assert_eq!(group.conn.output, client::config::OutputFormat::Yaml);
        // After the subcommand, as before.
        assert!(parsed(&["vnfm", "vim", "--os-cloud", "demo", "list"]).is_ok());
        assert!(parsed(&["vnfm", "vim", "list", "--os-cloud", "demo"]).is_ok());
        // Commands that take no connection options still refuse them, and a line without a
        // subcommand is still a usage error.
        for refused in [
            &["vnfm", "--os-cloud", "demo", "serve"][..],
            &["vnfm", "--os-cloud", "demo"],
            &["vnfm", "--os-cloud"],
            &["vnfm", "--listen", "x", "serve"],
        ] {
            assert!(parsed(refused).is_err(), "{refused:?}");
        }
    }

    /// Every command is a subcommand of the one program; the plugin runner is there but hidden.
    #[test]
    fn every_command_is_a_subcommand_of_vnfm() {
        let cli = Cli::command();
        let visible: Vec<&str> = cli
            .get_subcommands()
            .filter(|c| !c.is_hide_set())
            .map(|c| c.get_name())
            .collect();
        assert_eq!(
            visible,
            [
                "package",
                "serve",
                "pkg",
                "vim",
                "vnf",
                "op",
                "sub",
                "alarm",
                "pm",
                "indicator",
                "completion"
            ]
        );
        let runner = cli
            .find_subcommand("plugin-runner")
            .expect("the plugin runner is a subcommand");
        assert!(runner.is_hide_set());
    }

    /// Generated client secrets (Keycloak's among them) may begin with `-`.
    #[test]
    fn a_client_secret_may_begin_with_a_hyphen() {
        for args in [
            [
                "vnfm",
                "vnf",
                "list",
                "--client-secret",
                "-tShRniNJg7nwolUoe",
            ],
            ["vnfm", "vnf", "list", "--client-secret", "--x"],
        ] {
            Cli::try_parse_from(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        }
    }

    #[test]
    fn each_kind_of_command_line_reads_as_its_command() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("vnfm").chain(args.iter().copied()))
                .unwrap_or_else(|e| panic!("{args:?}: {e}"))
                .command
        };
        assert!(matches!(
            parse(&["package", "validate", "--json", "a.zip", "b"]),
            Command::Package(PackageCommand::Validate(ValidateArgs { ref packages, json: true, .. }))
                if packages.len() == 2
        ));
        assert!(matches!(parse(&["serve"]), Command::Serve(_)));
        assert!(matches!(parse(&["vnf", "list"]), Command::Vnf(_)));
        assert!(matches!(
            parse(&["plugin-runner", "/opt/p.so"]),
            Command::PluginRunner { ref library } if library == std::path::Path::new("/opt/p.so")
        ));
        assert!(matches!(
            parse(&["completion", "bash"]),
            Command::Completion { .. }
        ));
    }
}
