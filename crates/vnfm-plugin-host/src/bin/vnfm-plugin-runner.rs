//! `vnfm-plugin-runner <library>`: runs one hook call of a plugin library in its own process,
//! for the plugin host's isolated mode. Not meant to be started by hand.

fn main() -> std::process::ExitCode {
    vnfm_plugin_host::runner::main()
}
