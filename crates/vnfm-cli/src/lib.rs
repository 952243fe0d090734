//! `vnfm`: the VNF Manager's command-line program.
//!
//! The commands are served by three programs built from this crate. `vnfm` itself runs the
//! offline package commands (`package validate`, `package show`) and `completion`, and hands
//! every other command, unchanged, to a sibling program installed next to it: `serve` (and the
//! isolated plugin runner) to `vnfm-server`, the client commands to `vnfm-client`. A one-shot
//! `vnfm package validate` thus starts a small program instead of one that carries the REST
//! server, the store, the drivers and the HTTP client, and none of its start-up work.
//!
//! Exit codes: 0 success, 1 the command ran but found a problem (e.g. an invalid package, a
//! request the server refused, an operation that ended in FAILED_TEMP/FAILED/ROLLED_BACK),
//! 2 usage error (unknown option, missing argument, unreadable option file), 3 the server
//! could not be reached or refused the credentials, 4 `--timeout` expired.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

pub mod arena;
mod client;
mod package_cmd;
mod render;
mod serve_cmd;

/// ETSI NFV SOL-compliant VNF Manager.
#[derive(Debug, Parser)]
#[command(name = "vnfm", version, about, propagate_version = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// The same command line as [`Cli`] restricted to `vnfm package ...`: parsing it builds only
/// the package commands' definitions instead of every command's (a one-shot package check
/// otherwise spends a good part of its start-up building the client's dozens of options).
#[derive(Debug, Parser)]
#[command(name = "vnfm", version, about, propagate_version = true)]
struct PackageCli {
    #[command(subcommand)]
    command: PackageOnly,
}

#[derive(Debug, Subcommand)]
enum PackageOnly {
    /// Work with VNF packages (SOL004 CSAR) and their descriptors (SOL001 VNFD, ASD).
    #[command(subcommand)]
    Package(PackageCommand),
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
    /// Client: notification subscriptions (create, list, show, delete).
    Sub(client::SubGroup),
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

/// The program that runs a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    /// `vnfm`: package commands and shell completion.
    Front,
    /// `vnfm-server`: the REST server and the isolated plugin runner.
    Server,
    /// `vnfm-client`: the commands that talk to a running server.
    Client,
}

impl Program {
    fn file_name(self) -> &'static str {
        match self {
            Program::Front => "vnfm",
            Program::Server => "vnfm-server",
            Program::Client => "vnfm-client",
        }
    }
}

impl Command {
    fn program(&self) -> Program {
        match self {
            Command::Package(_) | Command::Completion { .. } => Program::Front,
            Command::Serve(_) | Command::PluginRunner { .. } => Program::Server,
            Command::Pkg(_)
            | Command::Vim(_)
            | Command::Vnf(_)
            | Command::Op(_)
            | Command::Sub(_) => Program::Client,
        }
    }
}

/// `main` of `vnfm`: parses the whole command line (so usage errors and `--help` are answered
/// here), runs the package and completion commands, and replaces itself with the sibling
/// program that runs any other command, passing the arguments on unchanged. Returns the exit
/// status: `vnfm` starts without Rust's runtime set-up (see `src/bin/vnfm.rs`), whose
/// `ExitCode` it cannot hand back.
pub fn main_vnfm() -> u8 {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "package") {
        let command = plain_package_command(&args).unwrap_or_else(|| {
            let PackageCli {
                command: PackageOnly::Package(command),
            } = PackageCli::parse();
            command
        });
        return status(run_package(command));
    }
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Package(command) => run_package(command),
        Command::Completion { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "vnfm", &mut std::io::stdout());
            Ok(0)
        }
        other => Err(hand_over(other.program())),
    };
    status(result)
}

/// The everyday forms of a package command (`package validate|show`, package paths and the
/// `--json`, `--strict` and `--require-signature` switches, each at most once), read without
/// building the argument parser: that is a tenth of a millisecond of a one-shot check of a
/// few milliseconds. Anything else (help, version, `--trusted-root`, `--`, unknown or
/// repeated options, a missing or extra path) is `None`, for the parser to read or refuse.
/// `args` leaves out the program name.
fn plain_package_command(args: &[OsString]) -> Option<PackageCommand> {
    let (first, rest) = args.split_first()?;
    let (command, rest) = rest.split_first()?;
    if first != "package" {
        return None;
    }
    let (mut json, mut strict, mut require_signature) = (false, false, false);
    let mut packages = Vec::new();
    for arg in rest {
        let switch = match arg.to_str() {
            Some("--json") => &mut json,
            Some("--strict") => &mut strict,
            Some("--require-signature") => &mut require_signature,
            _ if arg.is_empty() || arg.as_encoded_bytes().starts_with(b"-") => return None,
            _ => {
                packages.push(PathBuf::from(arg));
                continue;
            }
        };
        if std::mem::replace(switch, true) {
            return None;
        }
    }
    let check = CheckOptions {
        strict,
        trusted_roots: Vec::new(),
        require_signature,
    };
    match command.to_str()? {
        "validate" if !packages.is_empty() => Some(PackageCommand::Validate(ValidateArgs {
            packages,
            json,
            check,
        })),
        "show" if packages.len() == 1 => Some(PackageCommand::Show(ShowArgs {
            package: packages.pop()?,
            json,
            check,
        })),
        _ => None,
    }
}

fn run_package(command: PackageCommand) -> Result<u8, String> {
    match command {
        PackageCommand::Validate(args) => package_cmd::validate(&args),
        PackageCommand::Show(args) => package_cmd::show(&args),
    }
}

/// Ignores `SIGPIPE`, as Rust's runtime set-up does for a program with a Rust `main`: writing
/// to a closed pipe then fails with an error the commands tolerate instead of ending the
/// process. For `vnfm`, which starts without that set-up.
#[allow(unsafe_code)]
pub fn ignore_sigpipe() {
    // SAFETY: installs the predefined `SIG_IGN` disposition; no handler code runs.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// Tells the descriptor parser how much stack the main thread has (see
/// `vnfm::tosca::yaml::declare_stack_room`), so that it does not ask the C library, which
/// reads `/proc/self/maps` to answer. Call it at the start of `main`. The main thread's stack
/// may grow to the stack size limit, less what the arguments and environment above `main`
/// take, which the kernel bounds to a quarter of that limit; so three quarters of it, less a
/// margin for the start-up frames, are declared (8 MiB when unlimited). With no limit to be
/// read, nothing is declared and the parser finds out itself.
#[allow(unsafe_code)]
pub fn declare_main_thread_stack() {
    const UNLIMITED_AS: u64 = 8 << 20;
    const MARGIN: u64 = 128 << 10;
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` only writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } != 0 {
        return;
    }
    let size = if limit.rlim_cur == libc::RLIM_INFINITY {
        UNLIMITED_AS
    } else {
        limit.rlim_cur.min(1 << 30)
    };
    let room = (size / 4 * 3).saturating_sub(MARGIN);
    vnfm::tosca::yaml::declare_stack_room(usize::try_from(room).unwrap_or(0));
}

/// `main` of `vnfm-server`: `serve` and `plugin-runner`, with the same arguments as `vnfm`.
pub fn main_server() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve(args) => serve_cmd::run(*args),
        Command::PluginRunner { library } => Ok(vnfm_plugin_host::runner::run(&library)),
        other => Err(not_here(Program::Server, other.program())),
    };
    finish(result)
}

/// `main` of `vnfm-client`: the commands that talk to a running server, with the same
/// arguments as `vnfm`.
pub fn main_client() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Pkg(g) => Ok(client::run(client::Group::Pkg(g))),
        Command::Vim(g) => Ok(client::run(client::Group::Vim(g))),
        Command::Vnf(g) => Ok(client::run(client::Group::Vnf(g))),
        Command::Op(g) => Ok(client::run(client::Group::Op(g))),
        Command::Sub(g) => Ok(client::run(client::Group::Sub(g))),
        other => Err(not_here(Program::Client, other.program())),
    };
    finish(result)
}

/// Replaces this process with `program`, found next to the running executable, with the same
/// arguments and environment. Returns only on failure, with the message to print.
fn hand_over(program: Program) -> String {
    use std::os::unix::process::CommandExt;

    let name = program.file_name();
    let path = match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(name),
        Err(e) => return format!("cannot locate this program to find {name} next to it: {e}"),
    };
    if !path.is_file() {
        return format!(
            "this command is run by the {name} program, which is not installed next to vnfm \
             (looked for {}); install all of vnfm-cli's programs (`cargo install --path \
             crates/vnfm-cli`) or build them (`cargo build --release -p vnfm-cli`)",
            path.display()
        );
    }
    let err = std::process::Command::new(&path)
        .args(std::env::args_os().skip(1))
        .exec();
    format!("cannot start {}: {err}", path.display())
}

fn not_here(this: Program, runs_it: Program) -> String {
    format!(
        "{} does not run this command; {} does (start it as `vnfm ...`)",
        this.file_name(),
        runs_it.file_name()
    )
}

fn finish(result: Result<ExitCode, String>) -> ExitCode {
    match result {
        Ok(code) => code,
        Err(usage) => ExitCode::from(usage_error(&usage)),
    }
}

/// [`finish`] as an exit status.
fn status(result: Result<u8, String>) -> u8 {
    result.unwrap_or_else(|usage| usage_error(&usage))
}

/// Prints a usage error; its exit status.
fn usage_error(usage: &str) -> u8 {
    eprintln!("vnfm: {usage}");
    2
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os_args(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    /// What the plain reading makes of a command line is what the parser makes of it; what it
    /// leaves to the parser is everything but the everyday forms.
    #[test]
    fn plain_package_commands_read_as_the_parser_reads_them() {
        let plain: &[&[&str]] = &[
            &["package", "validate", "a.zip"],
            &["package", "validate", "a.zip", "dir/b", "c d.zip"],
            &["package", "validate", "--json", "a.zip", "b.zip"],
            &[
                "package",
                "validate",
                "a.zip",
                "--strict",
                "--require-signature",
            ],
            &[
                "package",
                "validate",
                "--strict",
                "--json",
                "--require-signature",
                "a",
            ],
            &["package", "show", "a.zip"],
            &["package", "show", "--json", "a.zip", "--strict"],
        ];
        for case in plain {
            let fast = plain_package_command(&os_args(case))
                .unwrap_or_else(|| panic!("{case:?} is read without the parser"));
            let Ok(PackageCli {
                command: PackageOnly::Package(parsed),
            }) = PackageCli::try_parse_from(std::iter::once("vnfm").chain(case.iter().copied()))
            else {
                panic!("the parser accepts {case:?}");
            };
            assert_eq!(format!("{fast:?}"), format!("{parsed:?}"), "{case:?}");
        }
        let to_the_parser: &[&[&str]] = &[
            &["package"],
            &["package", "validate"],
            &["package", "validate", "--help"],
            &["package", "validate", "-h", "a.zip"],
            &["package", "validate", "--version"],
            &["package", "validate", "--trusted-root", "root.pem", "a.zip"],
            &["package", "validate", "--trusted-root=root.pem", "a.zip"],
            &["package", "validate", "--json", "--json", "a.zip"],
            &["package", "validate", "--", "-a.zip"],
            &["package", "validate", "-", "a.zip"],
            &["package", "validate", ""],
            &["package", "validate", "--jsn", "a.zip"],
            &["package", "show"],
            &["package", "show", "a.zip", "b.zip"],
            &["package", "inspect", "a.zip"],
            &["pkg", "validate", "a.zip"],
        ];
        for case in to_the_parser {
            assert!(
                plain_package_command(&os_args(case)).is_none(),
                "{case:?} is left to the parser"
            );
        }
    }

    fn help_of(mut command: clap::Command, path: &[&str]) -> String {
        command.build();
        let mut sub = &mut command;
        for name in path {
            sub = sub.find_subcommand_mut(name).expect("subcommand exists");
        }
        sub.render_long_help().to_string()
    }

    /// `vnfm package ...` is parsed by the restricted parser: its commands must read exactly as
    /// the full command line's.
    #[test]
    fn the_package_only_parser_is_the_full_parsers_package_command() {
        for path in [
            &["package"][..],
            &["package", "validate"],
            &["package", "show"],
        ] {
            assert_eq!(
                help_of(PackageCli::command(), path),
                help_of(Cli::command(), path),
                "help of {path:?}"
            );
        }
        assert_eq!(
            PackageCli::command().get_version(),
            Cli::command().get_version()
        );
    }

    #[test]
    fn every_command_has_one_program() {
        let cli = Cli::try_parse_from(["vnfm", "package", "validate", "x"]).unwrap();
        assert_eq!(cli.command.program(), Program::Front);
        let cli = Cli::try_parse_from(["vnfm", "serve"]).unwrap();
        assert_eq!(cli.command.program(), Program::Server);
        let cli = Cli::try_parse_from(["vnfm", "vnf", "list"]).unwrap();
        assert_eq!(cli.command.program(), Program::Client);
    }
}
