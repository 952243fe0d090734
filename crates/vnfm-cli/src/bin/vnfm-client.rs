//! `vnfm-client`: runs the `vnfm` commands that talk to a running server. See the `vnfm_cli` library.

fn main() -> std::process::ExitCode {
    vnfm_cli::main_client()
}
