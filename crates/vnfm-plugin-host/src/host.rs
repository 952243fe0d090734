//! [`PluginHost`]: the VNFM's management driver backed by plugin libraries.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use sha2::{Digest, Sha256};
use vnfm_driver_api::{
    ArtifactSource, DriverError, HookArtifact, HookCall, HookOutcome, MgmtDriver, ObserveCall,
    ResolvedVim, RunControl,
};
use vnfm_plugin_abi::ffi::{self as abi, level};
use vnfm_plugin_abi::protocol::{
    ErrorKind, HookRequest, PluginHello, Request, Response, WireError,
};

use crate::library::{CallServices, Library};
use crate::{HostConfig, HostError, Isolation, convert, isolated};

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How often a waiting host looks at the cancellation flag.
const POLL: Duration = Duration::from_millis(20);

/// Loaded libraries and known digests, shared with the call threads.
#[derive(Default)]
struct Shared {
    /// In-process libraries by SHA-256.
    loaded: Mutex<HashMap<String, Arc<Library>>>,
    /// SHA-256 of installed library files, computed once per path.
    digests: Mutex<HashMap<PathBuf, String>>,
    /// Whether the library of a SHA-256 observes instances, once its handshake was seen.
    observes: Mutex<HashMap<String, bool>>,
}

impl Shared {
    fn library(&self, sha256: &str, path: &Path) -> Result<Arc<Library>, HostError> {
        // Held while loading, so two first calls do not both run the handshake.
        let mut loaded = lock(&self.loaded);
        if let Some(l) = loaded.get(sha256) {
            return Ok(l.clone());
        }
        let lib = Arc::new(Library::open(path)?);
        tracing::info!(
            plugin = %lib.hello().name,
            version = %lib.hello().version,
            sdk = %lib.hello().sdk_version,
            library = %path.display(),
            "plugin library loaded"
        );
        loaded.insert(sha256.to_string(), lib.clone());
        Ok(lib)
    }

    fn digest_of(&self, path: &Path) -> Result<String, HostError> {
        if let Some(d) = lock(&self.digests).get(path) {
            return Ok(d.clone());
        }
        let bytes = std::fs::read(path).map_err(|source| HostError::Io {
            what: "reading plugin library",
            path: path.to_path_buf(),
            source,
        })?;
        let d = hex::encode(Sha256::digest(&bytes));
        lock(&self.digests).insert(path.to_path_buf(), d.clone());
        Ok(d)
    }
}

/// A library chosen for a hook call.
#[derive(Debug, Clone)]
struct Resolved {
    path: PathBuf,
    sha256: String,
    isolation: Isolation,
}

/// The services of one hook call: package files, logs into tracing, cancellation.
pub(crate) struct CallCtx {
    artifacts: Arc<dyn ArtifactSource>,
    vims: Vec<ResolvedVim>,
    cancelled: AtomicBool,
    artifact: String,
    hook: String,
    op_occ_id: String,
}

impl CallCtx {
    /// Raises the flag the plugin polls.
    pub(crate) fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
    }

    /// `text` with the VIM secrets of the call scrubbed.
    pub(crate) fn redact(&self, text: &str) -> String {
        self.vims.iter().fold(text.to_string(), |t, v| v.redact(&t))
    }
}

impl CallServices for CallCtx {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, (i32, String)> {
        self.artifacts.read(path).map_err(|e| {
            let status = if e.kind() == std::io::ErrorKind::NotFound {
                abi::READ_NOT_FOUND
            } else {
                abi::READ_ERROR
            };
            (status, e.to_string())
        })
    }

    fn log(&self, lvl: u32, message: &str) {
        let message = self.redact(message);
        let (a, h, o) = (&self.artifact, &self.hook, &self.op_occ_id);
        match lvl {
            level::ERROR => {
                tracing::error!(target: "vnfm_plugin", artifact = %a, hook = %h, op_occ_id = %o, "{message}")
            }
            level::WARN => {
                tracing::warn!(target: "vnfm_plugin", artifact = %a, hook = %h, op_occ_id = %o, "{message}")
            }
            level::INFO => {
                tracing::info!(target: "vnfm_plugin", artifact = %a, hook = %h, op_occ_id = %o, "{message}")
            }
            level::DEBUG => {
                tracing::debug!(target: "vnfm_plugin", artifact = %a, hook = %h, op_occ_id = %o, "{message}")
            }
            _ => {
                tracing::trace!(target: "vnfm_plugin", artifact = %a, hook = %h, op_occ_id = %o, "{message}")
            }
        }
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// Why the host stopped waiting for a hook.
pub(crate) enum Stop {
    /// The deadline passed.
    Timeout,
    /// The occurrence was cancelled.
    Cancelled,
}

/// Waits for the next poll tick; `Some(stop)` when the call must be abandoned.
pub(crate) async fn poll_control(control: &RunControl) -> Option<Stop> {
    let now = Instant::now();
    let deadline = control.deadline();
    tokio::time::sleep(POLL.min(deadline.saturating_duration_since(now))).await;
    if control.is_cancelled() {
        Some(Stop::Cancelled)
    } else if Instant::now() >= deadline {
        Some(Stop::Timeout)
    } else {
        None
    }
}

/// The management driver that runs hooks in plugin libraries.
///
/// Implements [`vnfm_driver_api::MgmtDriver`]: give it to the lifecycle runner
/// (`LcmBuilder::mgmt_driver`). Libraries are loaded on first use and never unloaded; every
/// call checks the library's SHA-256 against the VNFD artifact first.
pub struct PluginHost {
    config: HostConfig,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for PluginHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginHost")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PluginHost {
    /// A host with `config`.
    pub fn new(config: HostConfig) -> Self {
        PluginHost {
            config,
            shared: Arc::new(Shared::default()),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HostConfig {
        &self.config
    }

    /// Loads the library at `path` in this process (checking its ABI version and shaking
    /// hands) and returns what it says about itself. For tools that check a plugin
    /// before binding it; loading runs the library's code, so only check trusted files.
    pub fn inspect(&self, path: &Path) -> Result<PluginHello, HostError> {
        let sha = self.shared.digest_of(path)?;
        Ok(self.shared.library(&sha, path)?.hello().clone())
    }

    fn resolve(
        &self,
        artifact: &HookArtifact,
        files: &dyn ArtifactSource,
    ) -> Result<Resolved, HostError> {
        let declared = artifact.sha256.as_ref().map(|d| d.to_ascii_lowercase());
        if let Some(spec) = self.config.plugins.get(&artifact.name) {
            let actual = self.shared.digest_of(&spec.library)?;
            match &declared {
                Some(expected) if *expected != actual => {
                    return Err(HostError::DigestMismatch {
                        artifact: artifact.name.clone(),
                        path: spec.library.clone(),
                        expected: expected.clone(),
                        actual,
                    });
                }
                Some(_) => {}
                None => tracing::warn!(
                    artifact = %artifact.name,
                    library = %spec.library.display(),
                    "the VNFD declares no digest for the artifact; using the installed library unchecked"
                ),
            }
            return Ok(Resolved {
                path: spec.library.clone(),
                sha256: actual,
                isolation: spec.isolation,
            });
        }
        if !self.config.package_libraries || artifact.external {
            return Err(HostError::NotConfigured {
                artifact: artifact.name.clone(),
            });
        }
        let expected = declared.ok_or_else(|| HostError::DigestRequired {
            artifact: artifact.name.clone(),
            file: artifact.file.clone(),
        })?;
        if !expected.bytes().all(|b| b.is_ascii_hexdigit()) || expected.len() != 64 {
            return Err(HostError::DigestRequired {
                artifact: artifact.name.clone(),
                file: artifact.file.clone(),
            });
        }
        let cached = self.config.cache_dir.join(format!("{expected}.so"));
        if cached.exists() && self.shared.digest_of(&cached)? == expected {
            return Ok(Resolved {
                path: cached,
                sha256: expected,
                isolation: self.config.package_isolation,
            });
        }
        let bytes = files
            .read(&artifact.file)
            .map_err(|source| HostError::Package {
                artifact: artifact.name.clone(),
                file: artifact.file.clone(),
                source,
            })?;
        let actual = hex::encode(Sha256::digest(&bytes));
        if actual != expected {
            return Err(HostError::DigestMismatch {
                artifact: artifact.name.clone(),
                path: PathBuf::from(&artifact.file),
                expected,
                actual,
            });
        }
        let io = |what, path: &Path| {
            let path = path.to_path_buf();
            move |source| HostError::Io { what, path, source }
        };
        std::fs::create_dir_all(&self.config.cache_dir).map_err(io(
            "creating plugin cache directory",
            &self.config.cache_dir,
        ))?;
        // Written under a temporary name and renamed: a reader never sees half a library.
        let tmp = self
            .config
            .cache_dir
            .join(format!(".{expected}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &bytes).map_err(io("writing plugin library", &tmp))?;
        std::fs::rename(&tmp, &cached).map_err(io("installing plugin library", &cached))?;
        lock(&self.shared.digests).insert(cached.clone(), expected.clone());
        Ok(Resolved {
            path: cached,
            sha256: expected,
            isolation: self.config.package_isolation,
        })
    }

    async fn run_in_process(
        &self,
        resolved: Resolved,
        request: Request,
        ctx: Arc<CallCtx>,
        control: &RunControl,
        observe: bool,
    ) -> Result<Result<Response, HostError>, Stop> {
        let (tx, mut rx) = tokio::sync::oneshot::channel();
        let shared = self.shared.clone();
        let thread_ctx = ctx.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("vnfm-hook-{}", ctx.hook))
            .spawn(move || {
                let result = shared
                    .library(&resolved.sha256, &resolved.path)
                    .and_then(|lib| {
                        if observe && !lib.hello().observes {
                            return Err(HostError::DoesNotObserve {
                                plugin: lib.hello().name.clone(),
                            });
                        }
                        lib.call(&request, &*thread_ctx)
                    });
                // The host may have stopped waiting (deadline): then nobody listens.
                let _ = tx.send(result);
            });
        if let Err(e) = spawned {
            return Ok(Err(HostError::Io {
                what: "starting a thread for plugin library",
                path: PathBuf::from(&ctx.artifact),
                source: e,
            }));
        }
        loop {
            tokio::select! {
                r = &mut rx => {
                    return Ok(r.unwrap_or_else(|_| Err(HostError::Protocol {
                        plugin: ctx.artifact.clone(),
                        message: "the hook's thread ended without an answer".into(),
                    })));
                }
                stop = poll_control(control) => {
                    if let Some(stop) = stop {
                        // The thread cannot be killed: it sees the flag at its next check and
                        // its late answer is dropped.
                        ctx.cancel();
                        return Err(stop);
                    }
                }
            }
        }
    }
}

fn driver_error(what: &str, e: WireError, ctx: &CallCtx, budget: Duration) -> DriverError {
    let message = format!("{what}: {}", ctx.redact(&e.message));
    match e.kind {
        ErrorKind::Transient => DriverError::transient(message),
        ErrorKind::InvalidInput => DriverError::invalid_input(message),
        ErrorKind::Timeout => DriverError::timeout(what, budget),
        ErrorKind::Cancelled => DriverError::cancelled(what),
        ErrorKind::Panic => {
            DriverError::permanent(format!("{what} panicked: {}", ctx.redact(&e.message)))
        }
        ErrorKind::Permanent | ErrorKind::Protocol | ErrorKind::Unknown => {
            DriverError::permanent(message)
        }
    }
}

#[async_trait]
impl MgmtDriver for PluginHost {
    /// An artifact runs when a plugin library is configured for its name, or, with package
    /// libraries enabled, when it is a file of the package whose SHA-256 is declared (what
    /// [`PluginHost::call`] checks first).
    fn cannot_run(&self, artifact: &HookArtifact) -> Option<String> {
        if self.config.plugins.contains_key(&artifact.name) {
            return None;
        }
        if !self.config.package_libraries {
            return Some(format!(
                "no plugin library is configured for artifact `{}` and plugin libraries from packages are not loaded",
                artifact.name
            ));
        }
        if artifact.external {
            return Some(format!(
                "artifact `{}` is outside the package ({}), and only plugin libraries configured for an artifact name run such artifacts",
                artifact.name, artifact.file
            ));
        }
        let digest_ok = artifact
            .sha256
            .as_deref()
            .is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit()));
        if !digest_ok {
            return Some(format!(
                "artifact `{}` ({}) has no SHA-256 digest in the VNFD or the manifest, and a plugin library from a package is loaded only with one",
                artifact.name, artifact.file
            ));
        }
        None
    }

    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
        let what = format!(
            "hook {} (artifact `{}`)",
            call.operation, call.artifact.name
        );
        // The hook's span (`lcm.hook`) is current: say what runs in it.
        tracing::Span::current().record("hook.kind", "plugin");
        let request = convert::hook_request(call);
        let invocation = Invocation {
            artifact: &call.artifact,
            files: &call.artifacts,
            vims: &call.vims,
            control: &call.control,
            op_occ_id: call.op_occ_id.to_string(),
            observe: false,
        };
        self.invoke(&what, invocation, request).await
    }

    /// Asks the plugin of `call.artifact` what it sees of the instance, when its handshake
    /// says it observes ([`vnfm_plugin_abi::protocol::OBSERVE_HOOK`]); unsupported otherwise
    /// (remembered per library, so a plugin that does not observe is loaded or started once).
    async fn observe(&self, call: &ObserveCall) -> Result<HookOutcome, DriverError> {
        let what = format!("observation by artifact `{}`", call.artifact.name);
        let request = convert::observe_request(call);
        let invocation = Invocation {
            artifact: &call.artifact,
            files: &call.artifacts,
            vims: &call.vims,
            control: &call.control,
            op_occ_id: String::new(),
            observe: true,
        };
        self.invoke(&what, invocation, request).await
    }
}

/// One request to a plugin: what it runs with.
struct Invocation<'a> {
    artifact: &'a HookArtifact,
    files: &'a Arc<dyn ArtifactSource>,
    vims: &'a [ResolvedVim],
    control: &'a RunControl,
    op_occ_id: String,
    /// An observation, made only of plugins whose handshake says they observe.
    observe: bool,
}

impl PluginHost {
    /// Runs `request` (`what` names it in errors) in the plugin of `inv.artifact`.
    async fn invoke(
        &self,
        what: &str,
        inv: Invocation<'_>,
        request: HookRequest,
    ) -> Result<HookOutcome, DriverError> {
        inv.control.check(what)?;
        let resolved = self.resolve(inv.artifact, &**inv.files)?;
        let known = lock(&self.shared.observes).get(&resolved.sha256).copied();
        if inv.observe && known == Some(false) {
            return Err(DriverError::unsupported(&inv.artifact.name, "observe"));
        }
        let ctx = Arc::new(CallCtx {
            artifacts: inv.files.clone(),
            vims: inv.vims.to_vec(),
            cancelled: AtomicBool::new(false),
            artifact: inv.artifact.name.clone(),
            hook: request.hook.clone(),
            op_occ_id: inv.op_occ_id,
        });
        let request = Request::Hook(Box::new(request));
        tracing::debug!(hook = %ctx.hook, artifact = %inv.artifact.name, isolation = ?resolved.isolation, "calling plugin");
        let sha256 = resolved.sha256.clone();
        let outcome = match resolved.isolation {
            Isolation::InProcess => {
                self.run_in_process(resolved, request, ctx.clone(), inv.control, inv.observe)
                    .await
            }
            Isolation::Process => {
                isolated::run(
                    &self.config.runner_path(),
                    &self.config.runner_args,
                    &resolved.path,
                    request,
                    ctx.clone(),
                    inv.control,
                    inv.observe,
                )
                .await
            }
        };
        if inv.observe {
            // What the handshake said, when the call got that far.
            let observes = match &outcome {
                Ok(Ok(_)) => Some(true),
                Ok(Err(HostError::DoesNotObserve { .. })) => Some(false),
                _ => None,
            };
            if let Some(o) = observes {
                lock(&self.shared.observes).insert(sha256, o);
            }
        }
        let budget = inv.control.budget();
        let response = match outcome {
            Err(Stop::Timeout) => return Err(DriverError::timeout(what, budget)),
            Err(Stop::Cancelled) => return Err(DriverError::cancelled(what)),
            Ok(Err(e)) => {
                let mut err = DriverError::from(e);
                if let DriverError::Permanent { message, .. }
                | DriverError::Transient { message, .. } = &mut err
                {
                    *message = ctx.redact(message);
                }
                return Err(err);
            }
            Ok(Ok(r)) => r,
        };
        match response {
            Response::Hook(out) => convert::outcome(*out).map_err(|e| {
                DriverError::permanent(format!(
                    "{what}: the plugin's output is not valid: {e}; fix the plugin"
                ))
            }),
            Response::Error(e) => Err(driver_error(what, e, &ctx, budget)),
            Response::Hello(_) => Err(DriverError::permanent(format!(
                "{what}: the plugin answered a hook call with a handshake"
            ))),
        }
    }
}
