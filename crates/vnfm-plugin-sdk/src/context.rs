//! [`HookContext`]: what a hook gets to work with.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::PluginError;
use crate::VimConnection;
use crate::abi::level;
use crate::protocol::{ArtifactRef, HookRequest};

/// Why a package file could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ReadFailure {
    /// No such file in the package.
    NotFound(String),
    /// Reading failed.
    Failed(String),
}

/// The host's services as the SDK sees them (over the C ABI, or in the test harness).
pub(crate) trait Services: Sync {
    /// The bytes of a package file.
    fn read_file(&self, path: &str) -> Result<Vec<u8>, ReadFailure>;
    /// Records a log line.
    fn log(&self, level: u32, message: &str);
    /// Whether the host has cancelled the call.
    fn is_cancelled(&self) -> bool;
}

/// Everything a hook can see: the operation's request, the VNF instance (with its VNFC
/// addresses in `instantiatedVnfInfo`), the VNFD, the package's files (read-only), the VIM
/// connections, the deadline and cancellation flag, the error handling data of earlier
/// attempts, and a logger whose lines end up in the VNFM's log.
pub struct HookContext<'a> {
    req: HookRequest,
    services: &'a dyn Services,
    started: Instant,
    deadline: Instant,
}

impl std::fmt::Debug for HookContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookContext")
            .field("request", &self.req)
            .finish_non_exhaustive()
    }
}

impl<'a> HookContext<'a> {
    pub(crate) fn new(req: HookRequest, services: &'a dyn Services) -> Self {
        let started = Instant::now();
        let budget = Duration::from_millis(req.deadline_ms);
        let deadline = started
            .checked_add(budget)
            .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 24 * 3600));
        HookContext {
            req,
            services,
            started,
            deadline,
        }
    }

    /// The hook being run, e.g. `instantiate_end`.
    pub fn hook(&self) -> &str {
        &self.req.hook
    }

    /// The LCM operation, e.g. `INSTANTIATE`.
    pub fn lcm_operation(&self) -> &str {
        &self.req.lcm_operation
    }

    /// The operation occurrence's id.
    pub fn op_occ_id(&self) -> &str {
        &self.req.op_occ_id
    }

    /// The VNFD artifact the hook is bound to.
    pub fn artifact(&self) -> &ArtifactRef {
        &self.req.artifact
    }

    /// The hook's `inputs` from the VNFD.
    pub fn inputs(&self) -> &Map<String, Value> {
        &self.req.inputs
    }

    /// The LCM operation's request body (e.g. an `InstantiateVnfRequest`).
    pub fn request(&self) -> &Value {
        &self.req.request
    }

    /// The request's `additionalParams`, when it has an object there.
    pub fn additional_params(&self) -> Option<&Map<String, Value>> {
        self.req.request.get("additionalParams")?.as_object()
    }

    /// The VNF instance as JSON (SOL003 `VnfInstance`).
    pub fn instance_json(&self) -> &Value {
        &self.req.instance
    }

    /// The VNF instance read into a type of the plugin's choice, typically
    /// `vnfm_types::VnfInstance` (add `vnfm-types` to the plugin's dependencies) or a small
    /// struct of the fields the plugin needs. Each call reads the JSON again: keep the value.
    /// Fails with [`PluginError::InvalidInput`] when the instance does not fit `T`.
    ///
    /// ```
    /// # use vnfm_plugin_sdk::{HookContext, PluginError};
    /// #[derive(serde::Deserialize)]
    /// #[serde(rename_all = "camelCase")]
    /// struct Instance {
    ///     id: String,
    ///     vnf_instance_name: Option<String>,
    /// }
    ///
    /// fn name(ctx: &HookContext<'_>) -> Result<String, PluginError> {
    ///     let i: Instance = ctx.instance_as()?;
    ///     Ok(i.vnf_instance_name.unwrap_or(i.id))
    /// }
    /// ```
    pub fn instance_as<T: DeserializeOwned>(&self) -> Result<T, PluginError> {
        T::deserialize(&self.req.instance).map_err(|e| {
            PluginError::invalid_input(format!(
                "the VNF instance sent by the VNFM cannot be read: {e}"
            ))
        })
    }

    /// The LCM operation's request body read into a type of the plugin's choice (e.g.
    /// `vnfm_types::InstantiateVnfRequest`). Fails with [`PluginError::InvalidInput`] when
    /// the request does not fit `T`.
    pub fn request_as<T: DeserializeOwned>(&self) -> Result<T, PluginError> {
        T::deserialize(&self.req.request).map_err(|e| {
            PluginError::invalid_input(format!(
                "the {} request sent by the VNFM cannot be read: {e}",
                self.req.lcm_operation
            ))
        })
    }

    /// The VNF instance's id (empty when the host sent none).
    pub fn vnf_instance_id(&self) -> &str {
        self.req
            .instance
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The VNFD in the VNFM's normalized form (JSON: `descriptorId`, `flavours[]` with `vdus`,
    /// `extCps`, `lcmHooks`, `artifacts`, ...).
    pub fn vnfd_json(&self) -> &Value {
        &self.req.vnfd
    }

    /// The deployment flavour, when the instance has one.
    pub fn flavour_id(&self) -> Option<&str> {
        self.req.flavour_id.as_deref()
    }

    /// The instance's VIM connections, with credentials, by connection id.
    pub fn vim_connections(&self) -> &BTreeMap<String, VimConnection> {
        &self.req.vim_connection_info
    }

    /// What an earlier attempt of this operation occurrence returned as error handling data
    /// (`null` on the first attempt).
    pub fn error_handling_data(&self) -> &Value {
        &self.req.error_handling_data
    }

    /// The W3C `traceparent` of the hook's span when the VNFM exports traces
    /// (`00-<trace id>-<span id>-<flags>`): send it on the plugin's own requests (the
    /// `traceparent` header) so that the operation's trace continues through them.
    pub fn traceparent(&self) -> Option<&str> {
        self.req.traceparent.as_deref()
    }

    /// The package's files.
    pub fn package(&self) -> Package<'_> {
        Package {
            services: self.services,
        }
    }

    /// The logger.
    pub fn log(&self) -> Logger<'_> {
        Logger {
            services: self.services,
        }
    }

    /// When the hook must have finished.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Time left before the deadline (zero once passed).
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Whether the occurrence was cancelled (or the host gave up on the hook).
    pub fn is_cancelled(&self) -> bool {
        self.services.is_cancelled()
    }

    /// `Err(Cancelled)` once cancelled, `Err(Timeout)` once past the deadline: call it between
    /// steps so that a cancelled or overdue hook stops at a safe point. `what` names the work.
    pub fn check(&self, what: &str) -> Result<(), PluginError> {
        if self.is_cancelled() {
            return Err(PluginError::Cancelled(what.to_string()));
        }
        if Instant::now() >= self.deadline {
            return Err(PluginError::Timeout {
                what: what.to_string(),
                budget: self.deadline.saturating_duration_since(self.started),
            });
        }
        Ok(())
    }

    /// Runs `fut` to completion on the plugin's runtime (see [`crate::runtime`]).
    #[cfg(feature = "runtime")]
    pub fn block_on<F: std::future::Future>(&self, fut: F) -> Result<F::Output, PluginError> {
        crate::runtime::block_on(fut)
    }
}

/// Read-only access to the VNF package's files.
#[derive(Clone, Copy)]
pub struct Package<'a> {
    services: &'a dyn Services,
}

impl std::fmt::Debug for Package<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Package")
    }
}

impl Package<'_> {
    /// The bytes of the file at the package-relative, `/`-separated `path` (as the VNFD names
    /// it, e.g. `Scripts/install.sh`).
    pub fn read(&self, path: &str) -> Result<Vec<u8>, PluginError> {
        self.services.read_file(path).map_err(|e| match e {
            ReadFailure::NotFound(m) | ReadFailure::Failed(m) => PluginError::PackageFile {
                path: path.to_string(),
                message: m,
            },
        })
    }

    /// The file at `path` as UTF-8 text.
    pub fn read_to_string(&self, path: &str) -> Result<String, PluginError> {
        String::from_utf8(self.read(path)?).map_err(|_| PluginError::PackageFile {
            path: path.to_string(),
            message: "the file is not UTF-8 text".into(),
        })
    }
}

/// Writes log lines into the VNFM's log (tracing), tagged with the plugin and the hook.
#[derive(Clone, Copy)]
pub struct Logger<'a> {
    services: &'a dyn Services,
}

impl std::fmt::Debug for Logger<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Logger")
    }
}

impl Logger<'_> {
    /// An error.
    pub fn error(&self, message: impl AsRef<str>) {
        self.services.log(level::ERROR, message.as_ref());
    }

    /// A warning.
    pub fn warn(&self, message: impl AsRef<str>) {
        self.services.log(level::WARN, message.as_ref());
    }

    /// Progress.
    pub fn info(&self, message: impl AsRef<str>) {
        self.services.log(level::INFO, message.as_ref());
    }

    /// Details.
    pub fn debug(&self, message: impl AsRef<str>) {
        self.services.log(level::DEBUG, message.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use crate::testing::HookHarness;
    use crate::{HookContext, HookOutput, HookResult, MgmtDriver, VimConnection};

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Instance {
        id: String,
        vnf_instance_name: String,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Request {
        flavour_id: String,
    }

    #[derive(Default)]
    struct Typed;

    impl MgmtDriver for Typed {
        fn instantiate_end(&self, ctx: &HookContext<'_>) -> HookResult {
            let i: Instance = ctx.instance_as()?;
            let r: Request = ctx.request_as()?;
            let vim = &ctx.vim_connections()["k8s"];
            Ok(HookOutput::none().with_metadata(
                "seen",
                json!([i.id, i.vnf_instance_name, r.flavour_id, vim.vim_type]),
            ))
        }
    }

    #[test]
    fn typed_accessors_read_the_json_the_host_sent() {
        let h = HookHarness::new(Typed)
            .instance(json!({"id": "vnf-1", "vnfInstanceName": "web"}))
            .request(json!({"flavourId": "small"}))
            .vim(
                "k8s",
                VimConnection {
                    vim_type: "ETSINFV.KUBERNETES.V_1".into(),
                    ..VimConnection::default()
                },
            );
        let out = h.run("instantiate_end").unwrap();
        assert_eq!(
            out.metadata.unwrap()["seen"],
            json!(["vnf-1", "web", "small", "ETSINFV.KUBERNETES.V_1"])
        );
    }

    #[test]
    fn an_instance_that_does_not_fit_is_invalid_input() {
        let h = HookHarness::new(Typed)
            .instance(json!({"id": 7}))
            .request(json!({"flavourId": "small"}));
        let err = h.run("instantiate_end").unwrap_err();
        assert_eq!(err.kind, crate::protocol::ErrorKind::InvalidInput);
        assert!(
            err.message
                .contains("the VNF instance sent by the VNFM cannot be read"),
            "{}",
            err.message
        );
        let h = HookHarness::new(Typed)
            .instance(json!({"id": "vnf-1", "vnfInstanceName": "web"}))
            .request(json!({}));
        let err = h.run("instantiate_end").unwrap_err();
        assert!(
            err.message
                .contains("the INSTANTIATE request sent by the VNFM cannot be read"),
            "{}",
            err.message
        );
    }
}
