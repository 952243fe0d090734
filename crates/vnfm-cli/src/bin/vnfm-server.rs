//! `vnfm-server`: runs `vnfm serve` (the SOL003 REST server) and the isolated plugin runner. See the `vnfm_cli` library.

fn main() -> std::process::ExitCode {
    vnfm_cli::main_server()
}
