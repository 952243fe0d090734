//! `vnfm`: the command-line program: package commands, shell completion, and the entry to every other command. See the `vnfm_cli` library.

fn main() -> std::process::ExitCode {
    vnfm_cli::main_vnfm()
}
