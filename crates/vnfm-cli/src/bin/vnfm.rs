//! `vnfm`: the command-line program: package commands, shell completion, and the entry to every other command. See the `vnfm_cli` library.

/// A one-shot program: memory comes from a bump arena on huge pages (see `vnfm_cli::arena`).
#[global_allocator]
static ALLOCATOR: vnfm_cli::arena::OneShotArena = vnfm_cli::arena::OneShotArena::new();

fn main() -> std::process::ExitCode {
    vnfm_cli::main_vnfm()
}
