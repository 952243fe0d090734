//! `vnfm`: the VNF Manager's command-line program. See the `vnfm_cli` library.

fn main() -> std::process::ExitCode {
    vnfm_cli::main()
}
