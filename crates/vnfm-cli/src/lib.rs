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

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

mod client;
mod package_cmd;
mod render;
mod serve_cmd;
mod serve_error;
mod serve_keystone;
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

/// Runs the command line of this process; returns its exit code.
pub fn main() -> ExitCode {
    match Cli::parse().command {
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
