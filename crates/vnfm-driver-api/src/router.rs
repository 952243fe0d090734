//! [`MgmtDriverRouter`]: one [`MgmtDriver`] made of several, chosen by artifact type.
//!
//! A VNFD may bind some hooks to Python scripts (`tosca.artifacts.Implementation.Python`)
//! and others to plugin libraries. The core holds one management driver; the router is that
//! driver when several kinds of artifact must run: each route names the artifact types its
//! driver runs, and a fallback (optional) takes every other type.
//!
//! ```
//! use std::sync::Arc;
//! use async_trait::async_trait;
//! use vnfm_driver_api::{HookArtifact, MgmtDriver, MgmtDriverRouter};
//!
//! struct Scripts;
//! #[async_trait]
//! impl MgmtDriver for Scripts {
//!     async fn call(&self, _: &vnfm_driver_api::HookCall)
//!         -> Result<vnfm_driver_api::HookOutcome, vnfm_driver_api::DriverError> {
//!         Ok(Default::default())
//!     }
//! }
//!
//! let router = MgmtDriverRouter::new()
//!     .route(["tosca.artifacts.Implementation.Python"], Arc::new(Scripts));
//! let artifact = |t: &str| HookArtifact {
//!     name: "hook".into(), file: "Scripts/hook.py".into(), artifact_type: t.into(),
//!     sha256: None, external: false, dependencies: vec![],
//! };
//! assert_eq!(router.cannot_run(&artifact("tosca.artifacts.Implementation.Python")), None);
//! assert!(router.cannot_run(&artifact("tosca.artifacts.Implementation.Bash")).is_some());
//! ```

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;

use crate::{DriverError, HookArtifact, HookCall, HookOutcome, MgmtDriver};

/// Dispatches hook calls to the driver registered for the artifact's type.
///
/// Types match exactly (TOSCA type names, e.g. `tosca.artifacts.Implementation.Python`); the
/// first route naming a type wins. Artifacts of a type no route names go to the fallback,
/// and are refused (at onboarding by [`MgmtDriver::cannot_run`], at run time by
/// [`MgmtDriver::call`]) when there is none.
#[derive(Default, Clone)]
pub struct MgmtDriverRouter {
    routes: Vec<(Vec<String>, Arc<dyn MgmtDriver>)>,
    fallback: Option<Arc<dyn MgmtDriver>>,
}

impl MgmtDriverRouter {
    /// A router with no routes and no fallback (it runs nothing).
    pub fn new() -> Self {
        Self::default()
    }

    /// Sends artifacts of the given types to `driver`.
    pub fn route<I, S>(mut self, artifact_types: I, driver: Arc<dyn MgmtDriver>) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let types = artifact_types.into_iter().map(Into::into).collect();
        self.routes.push((types, driver));
        self
    }

    /// Sends artifacts of every type no route names to `driver` (e.g. the plugin host, whose
    /// artifacts have vendor-specific types).
    pub fn fallback(mut self, driver: Arc<dyn MgmtDriver>) -> Self {
        self.fallback = Some(driver);
        self
    }

    /// The driver for artifacts of `artifact_type`, if any.
    pub fn driver_for(&self, artifact_type: &str) -> Option<&Arc<dyn MgmtDriver>> {
        self.routes
            .iter()
            .find(|(types, _)| types.iter().any(|t| t == artifact_type))
            .map(|(_, d)| d)
            .or(self.fallback.as_ref())
    }

    fn no_driver(&self, artifact: &HookArtifact) -> String {
        let known: Vec<&str> = self
            .routes
            .iter()
            .flat_map(|(types, _)| types.iter().map(String::as_str))
            .collect();
        if known.is_empty() {
            format!(
                "no management driver is configured, so artifact `{}` of type `{}` cannot run",
                artifact.name, artifact.artifact_type
            )
        } else {
            format!(
                "no management driver runs artifact `{}` of type `{}` (configured types: {})",
                artifact.name,
                artifact.artifact_type,
                known.join(", ")
            )
        }
    }
}

impl fmt::Debug for MgmtDriverRouter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let routes: Vec<&Vec<String>> = self.routes.iter().map(|(t, _)| t).collect();
        f.debug_struct("MgmtDriverRouter")
            .field("routes", &routes)
            .field("fallback", &self.fallback.is_some())
            .finish()
    }
}

#[async_trait]
impl MgmtDriver for MgmtDriverRouter {
    async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
        match self.driver_for(&call.artifact.artifact_type) {
            Some(driver) => driver.call(call).await,
            None => Err(DriverError::invalid_input(format!(
                "hook {}: {}",
                call.operation,
                self.no_driver(&call.artifact)
            ))),
        }
    }

    /// The chosen driver's answer, or why no driver takes the artifact's type.
    fn cannot_run(&self, artifact: &HookArtifact) -> Option<String> {
        match self.driver_for(&artifact.artifact_type) {
            Some(driver) => driver.cannot_run(artifact),
            None => Some(self.no_driver(artifact)),
        }
    }

    /// The chosen driver's observation; unsupported when no driver takes the artifact's type.
    async fn observe(&self, call: &crate::ObserveCall) -> Result<HookOutcome, DriverError> {
        match self.driver_for(&call.artifact.artifact_type) {
            Some(driver) => driver.observe(call).await,
            None => Err(DriverError::unsupported(
                self.no_driver(&call.artifact),
                "observe",
            )),
        }
    }

    /// A coordination script is a file named by the request, not an artifact with a type:
    /// it goes to the routes' drivers in order, then the fallback, and the first that does not
    /// answer [`DriverError::Unsupported`] runs it.
    async fn coordinate(&self, call: &crate::CoordinateCall) -> Result<(), DriverError> {
        let drivers = self
            .routes
            .iter()
            .map(|(_, d)| d)
            .chain(self.fallback.as_ref());
        for driver in drivers {
            match driver.coordinate(call).await {
                Err(DriverError::Unsupported { .. }) => continue,
                answer => return answer,
            }
        }
        Err(DriverError::unsupported(
            format!(
                "no configured management driver runs coordination scripts (`{}`)",
                call.script
            ),
            "coordinate",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NoArtifacts, RunControl};
    use std::sync::Mutex;
    use std::time::Duration;
    use vnfm_types::{LcmOperationType, VnfLcmOpOccId};

    /// Records the artifacts it was called with and answers with its tag in the metadata.
    struct Tagged {
        tag: &'static str,
        refuse: Option<&'static str>,
        calls: Mutex<Vec<String>>,
    }

    impl Tagged {
        fn new(tag: &'static str, refuse: Option<&'static str>) -> Arc<Self> {
            Arc::new(Tagged {
                tag,
                refuse,
                calls: Mutex::new(Vec::new()),
            })
        }
    }

    #[async_trait]
    impl MgmtDriver for Tagged {
        async fn call(&self, call: &HookCall) -> Result<HookOutcome, DriverError> {
            self.calls.lock().unwrap().push(call.artifact.name.clone());
            let mut patch = vnfm_types::KeyValuePairs::new();
            patch.insert("by".into(), self.tag.into());
            Ok(HookOutcome {
                metadata: Some(patch),
                ..Default::default()
            })
        }
        fn cannot_run(&self, _: &HookArtifact) -> Option<String> {
            self.refuse.map(str::to_string)
        }
    }

    fn artifact(name: &str, artifact_type: &str) -> HookArtifact {
        HookArtifact {
            name: name.into(),
            file: format!("Scripts/{name}"),
            artifact_type: artifact_type.into(),
            sha256: None,
            external: false,
            dependencies: vec![],
        }
    }

    fn call(artifact: HookArtifact) -> HookCall {
        let vnfd: vnfm_descriptor::Vnfd = serde_json::from_value(serde_json::json!({
            "descriptorId": "d1", "descriptorVersion": "1.0", "provider": "Acme",
            "productName": "Demo", "softwareVersion": "1.0",
            "toscaDefinitionsVersion": "tosca_simple_yaml_1_2", "vnfNodeType": "acme.VNF",
            "entryDefinitions": "Definitions/top.yaml", "flavours": []
        }))
        .unwrap();
        HookCall {
            op_occ_id: VnfLcmOpOccId::new("op-1"),
            lcm_operation: LcmOperationType::Instantiate,
            operation: "instantiate_end".into(),
            artifact,
            inputs: Default::default(),
            request: serde_json::json!({}),
            instance: serde_json::json!({}),
            vnfd: Arc::new(vnfd),
            flavour_id: None,
            vims: vec![],
            artifacts: Arc::new(NoArtifacts),
            control: RunControl::with_timeout(Duration::from_secs(5)),
            error_handling_data: serde_json::Value::Null,
            grant_request: None,
            grant: None,
            new_package: None,
        }
    }

    const PY: &str = "tosca.artifacts.Implementation.Python";
    const LIB: &str = "company.artifacts.Plugin";

    #[tokio::test]
    async fn calls_go_to_the_route_of_the_type_else_the_fallback() {
        let scripts = Tagged::new("scripts", None);
        let plugins = Tagged::new("plugins", None);
        let router = MgmtDriverRouter::new()
            .route([PY], scripts.clone())
            .fallback(plugins.clone());
        let out = router.call(&call(artifact("a.py", PY))).await.unwrap();
        assert_eq!(out.metadata.unwrap()["by"], "scripts");
        let out = router.call(&call(artifact("b.so", LIB))).await.unwrap();
        assert_eq!(out.metadata.unwrap()["by"], "plugins");
        assert_eq!(*scripts.calls.lock().unwrap(), ["a.py"]);
        assert_eq!(*plugins.calls.lock().unwrap(), ["b.so"]);
    }

    #[tokio::test]
    async fn without_a_fallback_an_unrouted_type_is_refused_and_names_the_known_types() {
        let scripts = Tagged::new("scripts", None);
        let router = MgmtDriverRouter::new().route([PY], scripts.clone());
        let err = router.call(&call(artifact("b.so", LIB))).await.unwrap_err();
        assert_eq!(err.kind(), "invalidInput");
        let msg = err.to_string();
        assert!(msg.contains("instantiate_end"), "{msg}");
        assert!(msg.contains(LIB) && msg.contains(PY), "{msg}");
        assert!(scripts.calls.lock().unwrap().is_empty());
        let why = router.cannot_run(&artifact("b.so", LIB)).unwrap();
        assert!(why.contains("`b.so`") && why.contains(PY), "{why}");
        let empty = MgmtDriverRouter::new().cannot_run(&artifact("a.py", PY));
        assert!(
            empty
                .unwrap()
                .contains("no management driver is configured")
        );
    }

    /// Runs coordination scripts, recording them (the other drivers of these tests do not).
    #[derive(Default)]
    struct Coordinates(Mutex<Vec<String>>);

    #[async_trait]
    impl MgmtDriver for Coordinates {
        async fn call(&self, _: &HookCall) -> Result<HookOutcome, DriverError> {
            Ok(HookOutcome::default())
        }
        async fn coordinate(&self, call: &crate::CoordinateCall) -> Result<(), DriverError> {
            self.0.lock().unwrap().push(call.script.clone());
            Ok(())
        }
    }

    fn coordinate_call() -> crate::CoordinateCall {
        let hook = call(artifact("a.py", PY));
        crate::CoordinateCall {
            op_occ_id: hook.op_occ_id,
            lcm_operation: LcmOperationType::ChangeVnfpkg,
            script: "./Scripts/coordinate_new_vnf.py".into(),
            rollback: false,
            vnfc: crate::CoordinatedVnfc::default(),
            params: Default::default(),
            coordination_request: serde_json::json!({}),
            instance: hook.instance,
            vnfd: hook.vnfd,
            artifacts: hook.artifacts,
            vims: vec![],
            control: hook.control,
        }
    }

    #[tokio::test]
    async fn a_coordination_script_goes_to_the_first_driver_that_runs_such_scripts() {
        let scripts = Arc::new(Coordinates::default());
        let router = MgmtDriverRouter::new()
            .route([LIB], Tagged::new("plugins", None))
            .route([PY], scripts.clone())
            .fallback(Tagged::new("fallback", None));
        router.coordinate(&coordinate_call()).await.unwrap();
        assert_eq!(
            *scripts.0.lock().unwrap(),
            ["./Scripts/coordinate_new_vnf.py"]
        );
        let none = MgmtDriverRouter::new()
            .route([LIB], Tagged::new("plugins", None))
            .fallback(Tagged::new("fallback", None));
        let err = none.coordinate(&coordinate_call()).await.unwrap_err();
        assert_eq!(err.kind(), "unsupported");
        assert!(err.to_string().contains("coordinate_new_vnf.py"), "{err}");
    }

    #[test]
    fn cannot_run_asks_the_chosen_driver_and_the_first_route_wins() {
        let broken = Tagged::new("broken", Some("python3 was not found"));
        let ok = Tagged::new("ok", None);
        let router = MgmtDriverRouter::new()
            .route([PY], broken)
            .route([PY, LIB], ok.clone())
            .fallback(ok);
        assert_eq!(
            router.cannot_run(&artifact("a.py", PY)).as_deref(),
            Some("python3 was not found")
        );
        assert_eq!(router.cannot_run(&artifact("b.so", LIB)), None);
        assert_eq!(router.cannot_run(&artifact("c", "other")), None);
        let dbg = format!("{router:?}");
        // The package listing that drivers copy from: none for an empty package.
        assert_eq!(crate::ArtifactSource::paths(&NoArtifacts), Some(vec![]));
        let files = crate::memory::MemArtifacts::new()
            .with("b", "2")
            .with("a", "1");
        assert_eq!(
            crate::ArtifactSource::paths(&files),
            Some(vec!["a".into(), "b".into()])
        );
        assert!(dbg.contains(PY) && dbg.contains("fallback: true"), "{dbg}");
    }
}
