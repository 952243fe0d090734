//! [`HostError`]: what goes wrong when finding, checking, loading or running a plugin.

use std::path::PathBuf;

use vnfm_driver_api::DriverError;

/// A failure of the plugin host. Converted into a [`DriverError`] for the lifecycle core.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// No library is configured for the artifact, and loading libraries from packages is off.
    #[error(
        "no plugin library is configured for VNFD artifact `{artifact}` and loading plugin libraries from packages is disabled; add the artifact to the host's plugins or enable package libraries"
    )]
    NotConfigured {
        /// The artifact name.
        artifact: String,
    },
    /// A library from a package can only be loaded when its digest is known.
    #[error(
        "VNFD artifact `{artifact}` ({file}) has no SHA-256 digest; a plugin library from a package is loaded only when the VNFD or the package manifest gives its digest"
    )]
    DigestRequired {
        /// The artifact name.
        artifact: String,
        /// Its package path.
        file: String,
    },
    /// The library's SHA-256 is not the one the VNFD declares.
    #[error(
        "plugin library {} for VNFD artifact `{artifact}` has SHA-256 {actual}, but the VNFD declares {expected}; install the library the package was built for",
        path.display()
    )]
    DigestMismatch {
        /// The artifact name.
        artifact: String,
        /// The library file (or the package path).
        path: PathBuf,
        /// The digest the VNFD declares.
        expected: String,
        /// The library's digest.
        actual: String,
    },
    /// A package file could not be read.
    #[error("cannot read plugin library `{file}` of VNFD artifact `{artifact}` from the package")]
    Package {
        /// The artifact name.
        artifact: String,
        /// Its package path.
        file: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A file operation of the host failed.
    #[error("{what} {} failed", path.display())]
    Io {
        /// What was being done, e.g. `reading plugin library`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The dynamic loader refused the library.
    #[error("cannot load plugin library {}: {message}", path.display())]
    Load {
        /// The library.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
    /// The library does not export the plugin entry point.
    #[error(
        "{} is not a VNFM plugin: it does not export `vnfm_mgmt_driver_v1` (build it with vnfm_plugin_sdk::export_mgmt_driver!)",
        path.display()
    )]
    MissingSymbol {
        /// The library.
        path: PathBuf,
    },
    /// The library was built for an ABI version this host does not accept.
    #[error(
        "plugin library {} was built for plugin ABI version {found}, but this VNFM accepts plugin ABI version {expected} only; rebuild the plugin against a vnfm-plugin-sdk that speaks ABI version {expected} (see \"ABI versions\" in docs/plugin-authoring.md)",
        path.display()
    )]
    AbiMismatch {
        /// The library.
        path: PathBuf,
        /// The library's ABI version.
        found: u32,
        /// The ABI version the host accepts.
        expected: u32,
    },
    /// The handshake or a message exchange went wrong.
    #[error("plugin {plugin}: {message}")]
    Protocol {
        /// The plugin (library path or name).
        plugin: String,
        /// What went wrong.
        message: String,
    },
    /// The isolated runner could not be started.
    #[error("cannot start the plugin runner {}", runner.display())]
    RunnerSpawn {
        /// The runner binary.
        runner: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The isolated runner process ended without answering.
    #[error("plugin {plugin} crashed during hook {hook}: its process {status}")]
    Crashed {
        /// The plugin.
        plugin: String,
        /// The hook.
        hook: String,
        /// How the process ended, e.g. `was killed by signal 6`.
        status: String,
    },
    /// The plugin was asked to observe an instance, but its handshake says it does not.
    #[error("plugin {plugin} does not observe instances")]
    DoesNotObserve {
        /// The plugin.
        plugin: String,
    },
}

impl HostError {
    /// The message with the causes appended (`...: No such file or directory`).
    pub fn full_message(&self) -> String {
        let mut out = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(s) = source {
            out.push_str(": ");
            out.push_str(&s.to_string());
            source = s.source();
        }
        out
    }
}

impl From<HostError> for DriverError {
    fn from(e: HostError) -> Self {
        let message = e.full_message();
        match &e {
            HostError::NotConfigured { .. }
            | HostError::DigestRequired { .. }
            | HostError::DigestMismatch { .. }
            | HostError::Package { .. } => DriverError::invalid_input(message),
            HostError::Io { .. } | HostError::RunnerSpawn { .. } => DriverError::transient(message),
            HostError::DoesNotObserve { plugin } => DriverError::unsupported(plugin, "observe"),
            _ => DriverError::permanent(message),
        }
    }
}
