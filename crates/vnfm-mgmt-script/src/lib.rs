//! A management driver that runs Tacker v2 Python LCM scripts unchanged.
//!
//! Tacker v2 packages bind `Vnflcm` hooks (`instantiate_start`, `scale_end`,
//! `heal_rollback_start`, ...) to `tosca.artifacts.Implementation.Python` artifacts. Tacker
//! runs such a script as `python3 <script>` with a pickled dict on stdin:
//!
//! | key | value here |
//! |---|---|
//! | `operation` | the hook name ([`HookCall::operation`]) |
//! | `request` | the LCM request body ([`HookCall::request`]) |
//! | `vnf_instance` | the instance ([`HookCall::instance`]), its `vimConnectionInfo` entries replaced by the resolved connections (with `accessInfo`, as Tacker's instance has them) |
//! | `grant_request`, `grant_response` | the occurrence's `GrantRequest` and `Grant` as SOL003 documents (dicts), `None` when it asked for no grant |
//! | `tmp_csar_dir` | a fresh temporary directory holding the package files |
//! | `new_csar_dir` | only for `modify_information_end` of a MODIFY_INFO that changes `vnfdId`: a second temporary directory holding the new package's files ([`HookCall::new_package`]) |
//! | `user_script_err_handling_data` | the data kept from earlier hooks of the occurrence (a dict, `{}` at first) |
//!
//! and reads a pickled dict from stdout: `vnf_instance` (fields to take over into the
//! instance) and `user_script_err_handling_data` (merged into the kept data). Exit status 0
//! is success. [`ScriptMgmtDriver`] does the same, with a deadline, cancellation (the
//! script's whole process group is killed) and bounded output capture; see
//! `docs/mgmt-scripts.md` for the protocol, the configuration and the differences from
//! Tacker.
//!
//! The same driver runs Tacker's user data classes for the OpenStack infrastructure driver
//! (it implements [`vnfm_driver_api::UserDataScripts`]: the class a request names in
//! `additionalParams.lcm-operation-user-data(-class)`, called for the operation in a copy of
//! the package as Tacker's `userdata_main.py` calls it; see the `userdata` module).
//!
//! The script runs as the server's user with the temporary directory as its working
//! directory and a reduced environment. **It is not sandboxed**: it can read and write
//! anything that user can, outside its directory included. Only run packages you trust.
//!
//! ```no_run
//! use std::sync::Arc;
//! use vnfm_driver_api::{MgmtDriver, MgmtDriverRouter};
//! use vnfm_mgmt_script::{ScriptConfig, ScriptMgmtDriver, PYTHON_ARTIFACT_TYPE};
//!
//! let scripts = ScriptMgmtDriver::new(ScriptConfig {
//!     python: "/usr/bin/python3".into(),
//!     ..ScriptConfig::default()
//! });
//! // Python hooks to the script driver; other artifact types would go to a fallback
//! // (e.g. the plugin host).
//! let mgmt: Arc<dyn MgmtDriver> =
//!     Arc::new(MgmtDriverRouter::new().route([PYTHON_ARTIFACT_TYPE], Arc::new(scripts)));
//! # let _ = mgmt;
//! ```

mod coordinate;
mod error;
mod merge;
mod pickle;
mod run;
mod userdata;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ffi::OsString;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use async_trait::async_trait;
use serde_json::{Map, Value as Json};
use vnfm_descriptor::Vnfd;
use vnfm_driver_api::{
    ArtifactSource, CoordinateCall, DriverError, HookArtifact, HookCall, HookOutcome, MgmtDriver,
};

pub use error::ScriptError;

/// The TOSCA artifact type of Python scripts.
pub const PYTHON_ARTIFACT_TYPE: &str = "tosca.artifacts.Implementation.Python";

/// Environment variables handed to scripts by default (when set for the server).
pub const DEFAULT_ENV_PASSTHROUGH: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TZ",
    "PYTHONPATH",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
];

/// How many failed occurrences' error-handling data are kept in memory at most.
const CARRY_CAPACITY: usize = 256;

/// Configuration of a [`ScriptMgmtDriver`]. `Debug` shows the names of the extra
/// environment variables, not their values.
#[derive(Clone)]
pub struct ScriptConfig {
    /// The interpreter: a path, or a name looked up on `PATH` (default `python3`).
    pub python: PathBuf,
    /// Where the temporary package directories are created (default: the system's
    /// temporary directory).
    pub work_dir: Option<PathBuf>,
    /// Names of the server's environment variables the script gets (the rest of the
    /// server's environment is not passed on).
    pub env_passthrough: Vec<String>,
    /// Extra environment variables for every script.
    pub env: Vec<(String, String)>,
    /// Largest stdout accepted, in bytes (a larger output fails the hook).
    pub stdout_limit: usize,
    /// How many bytes of the end of stderr are kept.
    pub stderr_limit: usize,
    /// How many of the last stderr lines a failure's error message carries.
    pub stderr_lines: usize,
}

impl Default for ScriptConfig {
    fn default() -> Self {
        ScriptConfig {
            python: PathBuf::from("python3"),
            work_dir: None,
            env_passthrough: DEFAULT_ENV_PASSTHROUGH
                .iter()
                .map(|s| s.to_string())
                .collect(),
            env: Vec::new(),
            stdout_limit: 16 * 1024 * 1024,
            stderr_limit: 64 * 1024,
            stderr_lines: 20,
        }
    }
}

impl std::fmt::Debug for ScriptConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let env: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("ScriptConfig")
            .field("python", &self.python)
            .field("work_dir", &self.work_dir)
            .field("env_passthrough", &self.env_passthrough)
            .field("env", &env)
            .field("stdout_limit", &self.stdout_limit)
            .field("stderr_limit", &self.stderr_limit)
            .field("stderr_lines", &self.stderr_lines)
            .finish()
    }
}

/// Runs hooks bound to `tosca.artifacts.Implementation.Python` artifacts as Tacker does
/// (see the [crate documentation](crate)). `Debug` shows the configuration and how many
/// occurrences have error-handling data waiting, not the data.
pub struct ScriptMgmtDriver {
    config: ScriptConfig,
    /// Error-handling data returned by scripts that then failed, by operation occurrence,
    /// handed to the next hook of the same occurrence (a failed hook's outcome cannot carry
    /// it to the store).
    carried: Mutex<Carried>,
}

#[derive(Default)]
struct Carried {
    data: HashMap<String, Map<String, Json>>,
    order: VecDeque<String>,
}

impl Carried {
    fn put(&mut self, occ: &str, data: Map<String, Json>) {
        if self.data.insert(occ.to_string(), data).is_none() {
            self.order.push_back(occ.to_string());
        }
        while self.order.len() > CARRY_CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.data.remove(&old);
            }
        }
    }

    fn take(&mut self, occ: &str) -> Option<Map<String, Json>> {
        let data = self.data.remove(occ)?;
        self.order.retain(|o| o != occ);
        Some(data)
    }
}

impl ScriptMgmtDriver {
    /// A driver with `config`.
    pub fn new(config: ScriptConfig) -> Self {
        ScriptMgmtDriver {
            config,
            carried: Mutex::new(Carried::default()),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ScriptConfig {
        &self.config
    }

    /// The interpreter's path, or why it cannot be used.
    pub fn interpreter(&self) -> Result<PathBuf, ScriptError> {
        which::which(&self.config.python).map_err(|source| ScriptError::NoInterpreter {
            python: self.config.python.display().to_string(),
            source,
        })
    }

    fn refusal(&self, artifact: &HookArtifact) -> Option<String> {
        if artifact.artifact_type != PYTHON_ARTIFACT_TYPE {
            return Some(format!(
                "artifact `{}` has type `{}`; the script driver runs {PYTHON_ARTIFACT_TYPE} artifacts only",
                artifact.name, artifact.artifact_type
            ));
        }
        if artifact.external {
            return Some(format!(
                "artifact `{}` is outside the package ({}); scripts run from the package only",
                artifact.name, artifact.file
            ));
        }
        // Onboarding records the digest of every artifact file the package holds: none means
        // the VNFD names a file the package lacks, and the hook would fail when reached.
        if artifact.sha256.is_none() {
            return Some(format!(
                "artifact `{}` names `{}`, which is not in the package; add the file to the package and onboard it again",
                artifact.name, artifact.file
            ));
        }
        None
    }

    fn environment(&self) -> Vec<(OsString, OsString)> {
        let mut env: Vec<(OsString, OsString)> = self
            .config
            .env_passthrough
            .iter()
            .filter_map(|k| std::env::var_os(k).map(|v| (OsString::from(k), v)))
            .collect();
        env.extend(
            self.config
                .env
                .iter()
                .map(|(k, v)| (OsString::from(k), OsString::from(v))),
        );
        env
    }

    async fn run(&self, call: &HookCall) -> Result<HookOutcome, ScriptError> {
        if let Some(why) = self.refusal(&call.artifact) {
            return Err(ScriptError::NotRunnable(why));
        }
        self.interpreter()?;
        let dir = materialize(call, self.config.work_dir.as_deref())?;
        // Tacker's `new_csar_dir`: the package a MODIFY_INFO moves the instance to.
        let new_dir = match &call.new_package {
            Some(p) => Some(materialize_package(
                &p.vnfd,
                &*p.files,
                BTreeSet::new(),
                self.config.work_dir.as_deref(),
            )?),
            None => None,
        };
        let script = dir.path().join(safe_relative(&call.artifact.file)?);
        let occ = call.op_occ_id.to_string();
        let mut sent_data = match &call.error_handling_data {
            Json::Object(m) => m.clone(),
            _ => Map::new(),
        };
        let carried = self.lock().take(&occ);
        let had_carried = carried.is_some();
        if let Some(c) = carried {
            sent_data.extend(c);
        }
        let result = self
            .attempt(call, (&dir, new_dir.as_ref()), script, &sent_data)
            .await;
        for d in std::iter::once(dir).chain(new_dir) {
            if let Err(e) = d.close() {
                tracing::warn!(hook = %call.operation, error = %e, "removing a temporary package directory of a hook script failed");
            }
        }
        match result {
            Ok(mut outcome) => {
                if had_carried && outcome.error_handling_data.is_none() {
                    // Reaches the store with this outcome.
                    outcome.error_handling_data = Some(Json::Object(sent_data));
                }
                Ok(outcome)
            }
            Err((e, failed_data)) => {
                // For the next attempt of the occurrence: what the failed script returned,
                // else what it was given (when that came from an earlier failure).
                match failed_data {
                    Some(d) => self.lock().put(&occ, d),
                    None if had_carried => self.lock().put(&occ, sent_data),
                    None => {}
                }
                Err(e)
            }
        }
    }

    /// One run of the script in `dir` (with `new_dir` as `new_csar_dir`, when given); on
    /// failure, the error and the error-handling data the script returned before failing, if
    /// any.
    async fn attempt(
        &self,
        call: &HookCall,
        (dir, new_dir): (&tempfile::TempDir, Option<&tempfile::TempDir>),
        script: PathBuf,
        sent_data: &Map<String, Json>,
    ) -> Result<HookOutcome, (ScriptError, Option<Map<String, Json>>)> {
        let instance = instance_with_vims(call);
        let mut input = Map::new();
        input.insert("operation".into(), call.operation.clone().into());
        input.insert("request".into(), call.request.clone());
        input.insert("vnf_instance".into(), instance.clone());
        // As Tacker's `grant_req.to_dict()` and `grant.to_dict()`: the SOL003 documents.
        let document = |v: Option<Json>| v.unwrap_or(Json::Null);
        input.insert(
            "grant_request".into(),
            document(
                call.grant_request
                    .as_ref()
                    .and_then(|g| serde_json::to_value(&**g).ok()),
            ),
        );
        input.insert(
            "grant_response".into(),
            document(
                call.grant
                    .as_ref()
                    .and_then(|g| serde_json::to_value(&**g).ok()),
            ),
        );
        input.insert(
            "tmp_csar_dir".into(),
            dir.path().to_string_lossy().into_owned().into(),
        );
        if let Some(new_dir) = new_dir {
            input.insert(
                "new_csar_dir".into(),
                new_dir.path().to_string_lossy().into_owned().into(),
            );
        }
        input.insert(
            "user_script_err_handling_data".into(),
            Json::Object(sent_data.clone()),
        );
        let stdin = pickle::encode(&Json::Object(input)).map_err(|e| (e, None))?;
        let finished = self
            .exec(dir.path(), script, stdin, &call.control)
            .await
            .map_err(|e| (e, None))?;
        // As Tacker: the output is read whatever the exit status, so that a failing script's
        // error-handling data reaches the retry.
        let decoded = if finished.stdout_overflow {
            Err(ScriptError::OutputTooLarge {
                limit: self.config.stdout_limit,
            })
        } else {
            pickle::decode(&finished.stdout)
        };
        if !finished.status.success() {
            let data = decoded
                .ok()
                .flatten()
                .and_then(|o| merge::error_data(&o, sent_data));
            return Err((
                self.exit_error(call.operation.clone(), &finished, &call.vims),
                data,
            ));
        }
        let output = decoded.map_err(|e| (e, None))?;
        merge::outcome(output, &instance, sent_data).map_err(|e| (e, None))
    }

    /// Runs `script` (a path in `dir`, the working directory) with `stdin`, within
    /// `control`'s deadline and cancellation; what it left, whatever its exit status.
    async fn exec(
        &self,
        dir: &Path,
        script: PathBuf,
        stdin: Vec<u8>,
        control: &vnfm_driver_api::RunControl,
    ) -> Result<run::Finished, ScriptError> {
        let python = self.interpreter()?;
        let label = script.display().to_string();
        let args = vec![script.into_os_string()];
        self.exec_args(dir, &python, args, &label, stdin, control)
            .await
    }

    /// Runs `python` with `args` in `dir` (the working directory) with `stdin`, within
    /// `control`'s deadline and cancellation; `label` names the run in the log.
    async fn exec_args(
        &self,
        dir: &Path,
        python: &Path,
        args: Vec<OsString>,
        label: &str,
        stdin: Vec<u8>,
        control: &vnfm_driver_api::RunControl,
    ) -> Result<run::Finished, ScriptError> {
        let started = Instant::now();
        let finished = run::run(
            run::Invocation {
                python,
                args,
                cwd: dir,
                env: with_trace_context(self.environment()),
                stdin,
                stdout_limit: self.config.stdout_limit,
                stderr_limit: self.config.stderr_limit,
            },
            control,
        )
        .await?;
        tracing::debug!(
            script = label,
            status = %run::describe(finished.status),
            elapsed_ms = started.elapsed().as_millis() as u64,
            "script finished"
        );
        Ok(finished)
    }

    /// The failure of the script that ran `subject` and exited unsuccessfully: its status and
    /// the last lines of its stderr, with the secrets of `vims` redacted.
    fn exit_error(
        &self,
        subject: String,
        finished: &run::Finished,
        vims: &[vnfm_driver_api::ResolvedVim],
    ) -> ScriptError {
        let tail = run::last_lines(&finished.stderr_tail, self.config.stderr_lines);
        ScriptError::Exit {
            subject,
            status: run::describe(finished.status),
            stderr_tail: vims.iter().fold(tail, |t, v| v.redact(&t)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Carried> {
        self.carried.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for ScriptMgmtDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptMgmtDriver")
            .field("config", &self.config)
            .field("carried_occurrences", &self.lock().data.len())
            .finish()
    }
}

impl Default for ScriptMgmtDriver {
    fn default() -> Self {
        Self::new(ScriptConfig::default())
    }
}

#[async_trait]
impl MgmtDriver for ScriptMgmtDriver {
    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
        let what = format!(
            "hook {} (artifact `{}`, {})",
            call.operation, call.artifact.name, call.artifact.file
        );
        call.control.check(&what)?;
        // The hook's span (`lcm.hook`) is current: say what runs in it.
        tracing::Span::current().record("hook.kind", "script");
        self.run(call).await.map_err(|e| e.into_driver_error(&what))
    }

    /// `None` for a Python artifact in the package when the interpreter is found; why not
    /// otherwise (another artifact type, an external artifact, a file the package lacks, no
    /// interpreter).
    fn cannot_run(&self, artifact: &HookArtifact) -> Option<String> {
        self.refusal(artifact)
            .or_else(|| self.interpreter().err().map(|e| e.to_string()))
    }

    /// Runs a coordination script as Tacker v2 does (see the `coordinate` module).
    async fn coordinate(&self, call: &CoordinateCall) -> Result<(), DriverError> {
        let what = format!(
            "coordination script {} for VNFC {} (VDU {})",
            call.script, call.vnfc.resource_id, call.vnfc.vdu_id
        );
        call.control.check(&what)?;
        self.coordinate_vnfc(call)
            .await
            .map_err(|e| e.into_driver_error(&what))
    }
}

/// `env` with `TRACEPARENT`, the W3C trace context of the hook's span, when tracing is on:
/// a script that calls out (or logs) continues the operation's trace.
fn with_trace_context(mut env: Vec<(OsString, OsString)>) -> Vec<(OsString, OsString)> {
    if let Some(t) = vnfm_trace::traceparent(&tracing::Span::current()) {
        env.push(("TRACEPARENT".into(), t.into()));
    }
    env
}

/// The instance as the script sees it: Tacker's instance carries the resolved VIM
/// connections (with `accessInfo`), so the call's VIMs replace the entries of the same key.
fn instance_with_vims(call: &HookCall) -> Json {
    with_vims(&call.instance, &call.vims)
}

/// `instance` with the entries of its `vimConnectionInfo` replaced by the resolved `vims`
/// of the same key.
fn with_vims(instance: &Json, vims: &[vnfm_driver_api::ResolvedVim]) -> Json {
    let mut instance = instance.clone();
    if vims.is_empty() {
        return instance;
    }
    if let Json::Object(obj) = &mut instance {
        let entry = obj
            .entry("vimConnectionInfo")
            .or_insert_with(|| Json::Object(Map::new()));
        if !entry.is_object() {
            *entry = Json::Object(Map::new());
        }
        if let Json::Object(map) = entry {
            for vim in vims {
                if let Ok(v) = serde_json::to_value(vim.connection_info()) {
                    map.insert(vim.connection_id.clone(), v);
                }
            }
        }
    }
    instance
}

/// `path` as a relative path inside the package, or an error when it is absolute or
/// climbs out (`..`).
fn safe_relative(path: &str) -> Result<PathBuf, ScriptError> {
    let p = Path::new(path);
    let ok = !path.is_empty() && p.components().all(|c| matches!(c, Component::Normal(_)));
    if ok {
        Ok(p.to_path_buf())
    } else {
        Err(ScriptError::UnsafePath(path.to_string()))
    }
}

/// A fresh directory (mode 0700) holding the package files: every file the package lists
/// except software images; when the source cannot list its files, the hook artifact, its
/// dependencies and the VNFD's other non-image artifacts.
fn materialize(call: &HookCall, work_dir: Option<&Path>) -> Result<tempfile::TempDir, ScriptError> {
    let required: BTreeSet<&str> = std::iter::once(call.artifact.file.as_str())
        .chain(call.artifact.dependencies.iter().map(String::as_str))
        .collect();
    materialize_package(&call.vnfd, &*call.artifacts, required, work_dir)
}

/// [`materialize`] for a package: its files (`required` ones at least) in a fresh directory.
fn materialize_package(
    vnfd: &Vnfd,
    artifacts: &dyn ArtifactSource,
    required: BTreeSet<&str>,
    work_dir: Option<&Path>,
) -> Result<tempfile::TempDir, ScriptError> {
    let mut builder = tempfile::Builder::new();
    builder.prefix("vnfm-hook-");
    let dir = match work_dir {
        Some(w) => builder.tempdir_in(w),
        None => builder.tempdir(),
    }
    .map_err(ScriptError::TempDir)?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
        .map_err(ScriptError::TempDir)?;
    let images: BTreeSet<&str> = vnfd
        .flavours
        .iter()
        .flat_map(|f| f.artifacts.iter())
        .filter(|a| a.artifact_type.contains("SwImage"))
        .map(|a| a.file.as_str())
        .collect();
    let (listed, optional): (Vec<String>, bool) = match artifacts.paths() {
        Some(paths) => (paths, false),
        None => (
            vnfd.flavours
                .iter()
                .flat_map(|f| f.artifacts.iter())
                .filter(|a| !a.external)
                .map(|a| a.file.clone())
                .collect(),
            true,
        ),
    };
    let mut all: BTreeSet<&str> = listed
        .iter()
        .map(String::as_str)
        .filter(|p| !images.contains(p))
        .collect();
    all.extend(required.iter().copied());
    for path in all {
        let rel = safe_relative(path)?;
        let bytes = match artifacts.read(path) {
            Ok(b) => b,
            Err(e)
                if optional
                    && !required.contains(path)
                    && e.kind() == std::io::ErrorKind::NotFound =>
            {
                continue;
            }
            Err(source) => {
                return Err(ScriptError::ReadPackageFile {
                    path: path.to_string(),
                    source,
                });
            }
        };
        let target = dir.path().join(&rel);
        let write = |source| ScriptError::WritePackageFile {
            path: path.to_string(),
            source,
        };
        if let Some(parent) = target.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)
                .map_err(write)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&target)
            .map_err(write)?;
        std::io::Write::write_all(&mut file, &bytes).map_err(write)?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_interpreter_is_refused_with_the_lookup_error() {
        use std::error::Error as _;
        let driver = ScriptMgmtDriver::new(ScriptConfig {
            python: PathBuf::from("/nonexistent/vnfm-test/python3"),
            ..ScriptConfig::default()
        });
        let err = driver.interpreter().unwrap_err();
        assert!(
            matches!(&err, ScriptError::NoInterpreter { python, .. } if python.ends_with("python3")),
            "{err:?}"
        );
        assert!(err.source().is_some());
        let refused = err.into_driver_error("hook instantiate_start");
        assert!(
            refused
                .to_string()
                .contains("the Python interpreter `/nonexistent/vnfm-test/python3` was not found"),
            "{refused}"
        );
    }

    #[test]
    fn package_paths_must_stay_inside() {
        assert!(safe_relative("Scripts/a.py").is_ok());
        for bad in ["", "/etc/passwd", "../x.py", "Scripts/../../x", "./a"] {
            assert!(
                matches!(safe_relative(bad), Err(ScriptError::UnsafePath(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn debug_leaves_out_environment_values_and_carried_data() {
        let driver = ScriptMgmtDriver::new(ScriptConfig {
            env: vec![("API_TOKEN".into(), "tok-very-secret".into())],
            ..ScriptConfig::default()
        });
        let mut data = Map::new();
        data.insert("password".into(), "carried-secret".into());
        driver.lock().put("occ-1", data);
        let dbg = format!("{driver:?}");
        assert!(
            dbg.contains("API_TOKEN") && dbg.contains("carried_occurrences: 1"),
            "{dbg}"
        );
        assert!(
            !dbg.contains("tok-very-secret") && !dbg.contains("carried-secret"),
            "{dbg}"
        );
    }

    #[test]
    fn carried_data_is_bounded_and_taken_once() {
        let mut c = Carried::default();
        for i in 0..(CARRY_CAPACITY + 10) {
            c.put(&format!("occ-{i}"), Map::new());
        }
        assert_eq!(c.data.len(), CARRY_CAPACITY);
        assert!(c.take("occ-0").is_none(), "the oldest entries are dropped");
        let last = format!("occ-{}", CARRY_CAPACITY + 9);
        assert!(c.take(&last).is_some());
        assert!(c.take(&last).is_none());
    }
}
