//! How the host finds plugin libraries and how it runs them: [`HostConfig`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Where a plugin's hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Isolation {
    /// In the VNFM's process, on a thread of their own: the fastest, but a plugin that
    /// aborts or corrupts memory takes the VNFM down with it.
    #[default]
    InProcess,
    /// In a child process (the `vnfm-plugin-runner` binary, which loads the same library and
    /// speaks the same messages over stdio), one per hook call: a crash fails the hook only,
    /// and a hook past its deadline is killed.
    Process,
}

/// An installed plugin library, bound to a VNFD artifact name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PluginSpec {
    /// The library file (`.so`).
    pub library: PathBuf,
    /// Where its hooks run.
    #[serde(default)]
    pub isolation: Isolation,
}

/// The host's configuration.
///
/// A hook call names a VNFD artifact (name, package path, SHA-256). The host uses the library
/// configured under the artifact's name in [`HostConfig::plugins`] if there is one, else (when
/// [`HostConfig::package_libraries`] is on) the library file shipped in the package. Either
/// way the library's SHA-256 must equal the digest the VNFD declares for the artifact; a
/// library from a package is refused when no digest is declared.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HostConfig {
    /// Installed libraries by VNFD artifact name.
    #[serde(default)]
    pub plugins: BTreeMap<String, PluginSpec>,
    /// Whether libraries shipped in VNF packages may be loaded.
    #[serde(default)]
    pub package_libraries: bool,
    /// Where libraries from packages run.
    #[serde(default)]
    pub package_isolation: Isolation,
    /// Where libraries from packages are written (as `<sha256>.so`) to be loaded.
    pub cache_dir: PathBuf,
    /// The `vnfm-plugin-runner` binary; by default the one next to the current executable
    /// (or in its parent directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner: Option<PathBuf>,
    /// Arguments put before the library path when the runner is started (a program that
    /// embeds the runner as a subcommand, like `vnfm plugin-runner <library>`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runner_args: Vec<String>,
}

impl HostConfig {
    /// No installed plugins, package libraries off, the cache under `cache_dir`.
    pub fn new(cache_dir: impl Into<PathBuf>) -> Self {
        HostConfig {
            plugins: BTreeMap::new(),
            package_libraries: false,
            package_isolation: Isolation::InProcess,
            cache_dir: cache_dir.into(),
            runner: None,
            runner_args: Vec::new(),
        }
    }

    /// Binds the VNFD artifact `artifact` to the installed `library`.
    pub fn plugin(
        mut self,
        artifact: impl Into<String>,
        library: impl Into<PathBuf>,
        isolation: Isolation,
    ) -> Self {
        self.plugins.insert(
            artifact.into(),
            PluginSpec {
                library: library.into(),
                isolation,
            },
        );
        self
    }

    /// Allows libraries shipped in packages, run with `isolation`.
    pub fn package_libraries(mut self, isolation: Isolation) -> Self {
        self.package_libraries = true;
        self.package_isolation = isolation;
        self
    }

    /// Uses `runner` as the isolated runner binary.
    pub fn runner(mut self, runner: impl Into<PathBuf>) -> Self {
        self.runner = Some(runner.into());
        self
    }

    /// Starts the runner as `runner <args...> <library>`: for a program that embeds the
    /// runner ([`crate::runner::run`]) behind a subcommand.
    pub fn runner_command(
        mut self,
        runner: impl Into<PathBuf>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.runner = Some(runner.into());
        self.runner_args = args.into_iter().map(Into::into).collect();
        self
    }

    /// The runner binary to use.
    pub fn runner_path(&self) -> PathBuf {
        if let Some(r) = &self.runner {
            return r.clone();
        }
        let name = "vnfm-plugin-runner";
        let exe = std::env::current_exe().unwrap_or_default();
        let dir = exe.parent().map(PathBuf::from).unwrap_or_default();
        let beside = dir.join(name);
        if beside.exists() {
            return beside;
        }
        // Test and bench executables live in `target/<profile>/deps`.
        dir.parent().map(|p| p.join(name)).unwrap_or(beside)
    }
}
