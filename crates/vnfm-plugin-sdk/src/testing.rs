//! Running a plugin's hooks in a unit test, without a VNFM: [`HookHarness`].
//!
//! The harness builds the same request the VNFM would send, passes it through the same JSON
//! encoding and the same dispatch and panic catching as the exported library, and serves
//! package files from memory or from a directory.
//!
//! ```
//! use serde_json::json;
//! use vnfm_plugin_sdk::testing::HookHarness;
//! use vnfm_plugin_sdk::{HookContext, HookOutput, HookResult, MgmtDriver};
//!
//! #[derive(Default)]
//! struct Greeter;
//!
//! impl MgmtDriver for Greeter {
//!     fn instantiate_end(&self, ctx: &HookContext<'_>) -> HookResult {
//!         let motd = ctx.package().read_to_string("Files/motd.txt")?;
//!         ctx.log().info(format!("greeting {}", ctx.vnf_instance_id()));
//!         Ok(HookOutput::none().with_metadata("motd", json!(motd.trim())))
//!     }
//! }
//!
//! let harness = HookHarness::new(Greeter)
//!     .instance(json!({"id": "vnf-1"}))
//!     .file("Files/motd.txt", "hello\n");
//! let out = harness.run("instantiate_end").unwrap();
//! assert_eq!(out.metadata.unwrap()["motd"], "hello");
//! assert_eq!(harness.logs()[0].message, "greeting vnf-1");
//! // Hooks the driver does not implement do nothing.
//! assert!(harness.run("terminate_start").unwrap().is_empty());
//! ```

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value};

use crate::abi::SDK_VERSION;
use crate::context::{ReadFailure, Services};
use crate::export::handle_request;
use crate::protocol::{ArtifactRef, HookRequest, Request, Response, WireError};
use crate::{HookOutput, MgmtDriver, VimConnection};

/// One log line a hook wrote (`level` is one of [`crate::abi::level`]).
pub type LogLine = vnfm_plugin_abi::LogRecord;

/// Runs hooks of a driver as the VNFM would (see the [module docs](self)).
pub struct HookHarness<D> {
    driver: D,
    template: HookRequest,
    files: BTreeMap<String, Vec<u8>>,
    package_dir: Option<PathBuf>,
    cancelled: Arc<AtomicBool>,
    logs: Mutex<Vec<LogLine>>,
}

impl<D> std::fmt::Debug for HookHarness<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookHarness")
            .field("request", &self.template)
            .finish_non_exhaustive()
    }
}

impl<D: MgmtDriver> HookHarness<D> {
    /// A harness around `driver`: empty request and instance, a 60 s budget, no files.
    pub fn new(driver: D) -> Self {
        HookHarness {
            driver,
            template: HookRequest {
                hook: String::new(),
                lcm_operation: String::new(),
                op_occ_id: "op-occ-test".into(),
                artifact: ArtifactRef {
                    name: "mgmt-driver".into(),
                    file: "Plugins/plugin.so".into(),
                    artifact_type: "tosca.artifacts.Implementation".into(),
                    sha256: None,
                },
                inputs: Map::new(),
                request: Value::Object(Map::new()),
                instance: Value::Object(Map::new()),
                vnfd: Value::Null,
                flavour_id: None,
                vim_connection_info: BTreeMap::new(),
                deadline_ms: 60_000,
                error_handling_data: Value::Null,
                traceparent: None,
            },
            files: BTreeMap::new(),
            package_dir: None,
            cancelled: Arc::new(AtomicBool::new(false)),
            logs: Mutex::new(Vec::new()),
        }
    }

    /// The driver.
    pub fn driver(&self) -> &D {
        &self.driver
    }

    /// Sets the LCM operation's request body.
    pub fn request(mut self, request: Value) -> Self {
        self.template.request = request;
        self
    }

    /// Sets the VNF instance (JSON).
    pub fn instance(mut self, instance: Value) -> Self {
        self.template.instance = instance;
        self
    }

    /// Replaces the VNF instance of a harness in place (e.g. after a scale-out).
    pub fn set_instance(&mut self, instance: Value) {
        self.template.instance = instance;
    }

    /// Sets the VNFD (normalized JSON).
    pub fn vnfd(mut self, vnfd: Value) -> Self {
        self.template.vnfd = vnfd;
        self
    }

    /// Sets the flavour.
    pub fn flavour(mut self, flavour_id: impl Into<String>) -> Self {
        self.template.flavour_id = Some(flavour_id.into());
        self
    }

    /// Sets the hook's `inputs`.
    pub fn inputs(mut self, inputs: Map<String, Value>) -> Self {
        self.template.inputs = inputs;
        self
    }

    /// Sets the LCM operation (`INSTANTIATE`, ...); by default it follows the hook's name.
    pub fn lcm_operation(mut self, op: impl Into<String>) -> Self {
        self.template.lcm_operation = op.into();
        self
    }

    /// Adds a VIM connection.
    pub fn vim(mut self, key: impl Into<String>, info: VimConnection) -> Self {
        self.template.vim_connection_info.insert(key.into(), info);
        self
    }

    /// Adds a package file.
    pub fn file(mut self, path: impl Into<String>, content: impl Into<Vec<u8>>) -> Self {
        self.files.insert(path.into(), content.into());
        self
    }

    /// Serves package files (those not added with [`HookHarness::file`]) from `dir`.
    pub fn package_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.package_dir = Some(dir.into());
        self
    }

    /// Sets the hook's time budget.
    pub fn budget(mut self, budget: Duration) -> Self {
        self.template.deadline_ms = u64::try_from(budget.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Sets the error handling data of an earlier attempt.
    pub fn error_handling_data(mut self, data: Value) -> Self {
        self.template.error_handling_data = data;
        self
    }

    /// The flag [`crate::HookContext::is_cancelled`] reads; set it to cancel.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancelled.clone()
    }

    /// Every log line written so far.
    pub fn logs(&self) -> Vec<LogLine> {
        self.logs.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Runs `hook` and returns what the VNFM would receive: the output, or the error
    /// (kind and message) the hook failed with (a panic shows as kind `panic`).
    pub fn run(&self, hook: &str) -> Result<HookOutput, WireError> {
        let mut req = self.template.clone();
        req.hook = hook.to_string();
        if req.lcm_operation.is_empty() {
            req.lcm_operation = lcm_operation_of(hook).to_string();
        }
        let bytes = serde_json::to_vec(&Request::Hook(Box::new(req))).unwrap_or_default();
        let driver = || &self.driver;
        let out = handle_request(&driver, &bytes, self, "test-plugin", SDK_VERSION);
        match serde_json::from_slice::<Response>(&out) {
            Ok(Response::Hook(o)) => Ok(*o),
            Ok(Response::Error(e)) => Err(e),
            Ok(Response::Hello(_)) | Err(_) => Err(WireError {
                kind: crate::protocol::ErrorKind::Protocol,
                message: "the plugin answered a hook call with something else".into(),
            }),
        }
    }

    fn read_dir_file(&self, path: &str) -> Result<Vec<u8>, ReadFailure> {
        let Some(dir) = &self.package_dir else {
            return Err(ReadFailure::NotFound(format!(
                "the package has no file `{path}`"
            )));
        };
        let rel = Path::new(path);
        if rel
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(ReadFailure::Failed(format!(
                "`{path}` is not a package-relative path"
            )));
        }
        std::fs::read(dir.join(rel)).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                ReadFailure::NotFound(format!("the package has no file `{path}`"))
            }
            _ => ReadFailure::Failed(e.to_string()),
        })
    }
}

impl<D: MgmtDriver> Services for HookHarness<D> {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, ReadFailure> {
        match self.files.get(path) {
            Some(b) => Ok(b.clone()),
            None => self.read_dir_file(path),
        }
    }

    fn log(&self, level: u32, message: &str) {
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(LogLine {
                level,
                message: message.to_string(),
            });
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// The LCM operation a hook belongs to (`scale_rollback_end` -> `SCALE`).
pub fn lcm_operation_of(hook: &str) -> &'static str {
    let stem = hook
        .trim_end_matches("_start")
        .trim_end_matches("_end")
        .trim_end_matches("_rollback");
    match stem {
        "instantiate" => "INSTANTIATE",
        "terminate" => "TERMINATE",
        "modify_information" => "MODIFY_INFO",
        "change_flavour" => "CHANGE_FLAVOUR",
        "change_external_connectivity" => "CHANGE_EXT_CONN",
        "operate" => "OPERATE",
        "heal" => "HEAL",
        "scale" => "SCALE",
        "scale_to_level" => "SCALE_TO_LEVEL",
        "change_current_package" => "CHANGE_VNFPKG",
        _ => "UNKNOWN",
    }
}
