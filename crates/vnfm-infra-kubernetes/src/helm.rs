//! Helm charts: the [`HelmRenderer`] seam and its two implementations.
//!
//! No Helm template engine exists in Rust, so a real Helm renders the chart; the driver then
//! applies the rendered objects itself (ordering, labels, readiness, inventory), exactly as it
//! does for plain manifests. Helm's own release records are not written.
//!
//! - [`HelmBinary`]: the `helm` program (`helm template`), called with an argument vector,
//!   never through a shell. The chart archive is written to a private temporary directory
//!   because `helm template` only reads charts from the file system.
//! - [`HelmLibrary`]: the Helm SDK compiled as a C library (`libhelm_c.so`, shipped by the PyPI
//!   package `helm-python-sdk`), loaded with libloading. Charts are loaded from memory.
//!
//! Chart hooks (`helm.sh/hook` annotations) are not run: their objects are left out, with a
//! warning in the logs.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::KubeError;
use crate::manifest::{Document, parse_documents};

/// Where a chart comes from.
#[derive(Debug, Clone)]
pub enum ChartSource {
    /// A packaged chart (`.tgz`), in memory.
    Archive {
        /// Name for messages (the package path).
        name: String,
        /// The archive bytes.
        bytes: Vec<u8>,
    },
    /// An unpacked chart directory on the local file system.
    Directory(PathBuf),
}

impl ChartSource {
    /// The name used in messages.
    pub fn name(&self) -> String {
        match self {
            ChartSource::Archive { name, .. } => name.clone(),
            ChartSource::Directory(p) => p.display().to_string(),
        }
    }
}

/// What to render.
#[derive(Debug, Clone)]
pub struct ChartRequest {
    /// The chart.
    pub chart: ChartSource,
    /// Release name (`.Release.Name`).
    pub release: String,
    /// Release namespace (`.Release.Namespace`).
    pub namespace: String,
    /// Values, merged over the chart's defaults.
    pub values: Value,
}

/// Renders Helm charts into Kubernetes objects.
#[async_trait]
pub trait HelmRenderer: Send + Sync {
    /// A name for messages (`helm binary`, `Helm SDK library`).
    fn name(&self) -> &str;

    /// Renders `req`: CRDs from the chart's `crds/` directory first, then the templates, as
    /// documents whose `source` is `<chart>/<template path>`.
    async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError>;
}

/// Splits rendered output into documents, dropping hooks and empty templates.
fn documents_of(chart: &str, path: &str, text: &str) -> Result<Vec<Document>, KubeError> {
    let source = format!("{chart}:{path}");
    let docs = parse_documents(&source, text)?;
    Ok(docs
        .into_iter()
        .filter(|d| {
            let hook = d
                .object
                .pointer("/metadata/annotations/helm.sh~1hook")
                .is_some();
            if hook {
                tracing::warn!(
                    source = %d.source,
                    "Helm hook objects are not run by the Kubernetes driver; skipped"
                );
            }
            !hook
        })
        .collect())
}

fn helm_err(chart: &ChartSource, renderer: &str, message: impl Into<String>) -> KubeError {
    KubeError::Helm {
        chart: chart.name(),
        renderer: renderer.to_string(),
        message: message.into(),
    }
}

/// The `helm` program.
#[derive(Debug, Clone)]
pub struct HelmBinary {
    program: PathBuf,
}

impl HelmBinary {
    /// Uses `program` (a path, or a name looked up on `PATH`).
    pub fn new(program: impl Into<PathBuf>) -> Self {
        HelmBinary {
            program: program.into(),
        }
    }

    /// `helm` from `PATH`, when there is one.
    pub fn from_path() -> Option<Self> {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|d| d.join("helm"))
            .find(|p| p.is_file())
            .map(HelmBinary::new)
    }
}

#[async_trait]
impl HelmRenderer for HelmBinary {
    fn name(&self) -> &str {
        "helm binary"
    }

    async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError> {
        let name = self.name().to_string();
        let work = tempfile::tempdir().map_err(|e| {
            helm_err(
                &req.chart,
                &name,
                format!("cannot create a work directory: {e}"),
            )
        })?;
        let chart_path = match &req.chart {
            ChartSource::Archive { bytes, .. } => {
                let p = work.path().join("chart.tgz");
                std::fs::write(&p, bytes).map_err(|e| {
                    helm_err(
                        &req.chart,
                        &name,
                        format!("cannot write the chart archive: {e}"),
                    )
                })?;
                p
            }
            ChartSource::Directory(d) => d.clone(),
        };
        let values_path = work.path().join("values.json");
        std::fs::write(&values_path, req.values.to_string())
            .map_err(|e| helm_err(&req.chart, &name, format!("cannot write the values: {e}")))?;
        let output = tokio::process::Command::new(&self.program)
            .arg("template")
            .arg(&req.release)
            .arg(&chart_path)
            .arg("--namespace")
            .arg(&req.namespace)
            .arg("--values")
            .arg(&values_path)
            .arg("--include-crds")
            .kill_on_drop(true)
            .output()
            .await
            .map_err(|e| {
                helm_err(
                    &req.chart,
                    &name,
                    format!("cannot run {}: {e}", self.program.display()),
                )
            })?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr);
            return Err(helm_err(
                &req.chart,
                &name,
                format!(
                    "helm template failed ({}): {}",
                    output.status,
                    stderr.trim()
                ),
            ));
        }
        let text = String::from_utf8(output.stdout)
            .map_err(|_| helm_err(&req.chart, &name, "helm template printed non-UTF-8 output"))?;
        // `helm template` marks each document with `# Source: <path>`.
        let mut docs = Vec::new();
        for chunk in text.split("\n---") {
            let path = chunk
                .lines()
                .find_map(|l| l.strip_prefix("# Source: "))
                .unwrap_or("rendered")
                .trim()
                .to_string();
            docs.extend(documents_of(&req.chart.name(), &path, chunk)?);
        }
        Ok(docs)
    }
}

/// The Helm SDK C library (`libhelm_c.so`).
#[derive(Clone)]
pub struct HelmLibrary {
    inner: Arc<ffi::Library>,
}

impl std::fmt::Debug for HelmLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HelmLibrary")
            .field("path", &self.inner.path)
            .field("version", &self.inner.version)
            .finish()
    }
}

impl HelmLibrary {
    /// Loads the library at `path` and checks its ABI version (major 0).
    pub fn load(path: impl AsRef<Path>) -> Result<HelmLibrary, KubeError> {
        let inner = ffi::Library::open(path.as_ref())?;
        Ok(HelmLibrary {
            inner: Arc::new(inner),
        })
    }

    /// The library's version (`0.2.2`) and the Helm SDK inside it (`v4.2.3`).
    pub fn version(&self) -> (String, String) {
        (self.inner.version.clone(), self.inner.sdk_version.clone())
    }
}

#[async_trait]
impl HelmRenderer for HelmLibrary {
    fn name(&self) -> &str {
        "Helm SDK library"
    }

    async fn render(&self, req: &ChartRequest) -> Result<Vec<Document>, KubeError> {
        let lib = self.inner.clone();
        let req2 = req.clone();
        let rendered = tokio::task::spawn_blocking(move || lib.render(&req2))
            .await
            .map_err(|e| {
                helm_err(
                    &req.chart,
                    self.name(),
                    format!("the render task failed: {e}"),
                )
            })??;
        let chart = req.chart.name();
        let mut docs = Vec::new();
        for (path, text) in rendered {
            if path.ends_with("NOTES.txt") {
                continue;
            }
            docs.extend(documents_of(&chart, &path, &text)?);
        }
        Ok(docs)
    }
}

/// The C ABI of `libhelm_c` (as declared by its Python binding, `helm_python/_native.py`):
/// status codes are `int32` (0 = OK), chart handles are `uint64`, strings the library returns
/// are owned by it and released with `helm_free_string`, input strings are borrowed for the
/// call.
#[allow(unsafe_code)]
mod ffi {
    use std::ffi::{CStr, CString, c_char, c_void};
    use std::path::{Path, PathBuf};

    use libloading::Symbol;
    use serde_json::Value;

    use super::{ChartRequest, ChartSource};
    use crate::KubeError;

    type VersionFn = unsafe extern "C" fn() -> *mut c_char;
    type FreeStringFn = unsafe extern "C" fn(*mut c_void);
    type LoadArchiveFn = unsafe extern "C" fn(*const u8, u64, *mut u64, *mut *mut c_char) -> i32;
    type LoadFn = unsafe extern "C" fn(*const c_char, *mut u64, *mut *mut c_char) -> i32;
    type FreeFn = unsafe extern "C" fn(u64, *mut *mut c_char) -> i32;
    type RenderFn = unsafe extern "C" fn(
        u64,
        *const c_char,
        *const c_char,
        *mut *mut c_char,
        *mut *mut c_char,
    ) -> i32;
    type ListFn = unsafe extern "C" fn(u64, *mut *mut c_char, *mut *mut c_char) -> i32;

    pub(super) struct Library {
        lib: libloading::Library,
        pub(super) path: PathBuf,
        pub(super) version: String,
        pub(super) sdk_version: String,
    }

    fn load_err(path: &Path, message: impl std::fmt::Display) -> KubeError {
        KubeError::Helm {
            chart: "-".into(),
            renderer: "Helm SDK library".into(),
            message: format!("cannot use {}: {message}", path.display()),
        }
    }

    fn load_failed(path: &Path, symbol: &'static str, source: libloading::Error) -> KubeError {
        KubeError::HelmSdkLoad {
            chart: "-".into(),
            path: path.to_path_buf(),
            symbol,
            source,
        }
    }

    /// The name of a NUL-free ASCII symbol (`b"helm_render"`), for messages.
    fn symbol_name(symbol: &'static [u8]) -> &'static str {
        std::str::from_utf8(symbol).unwrap_or("a function")
    }

    impl Library {
        pub(super) fn open(path: &Path) -> Result<Library, KubeError> {
            // SAFETY: loading runs the library's initializers; libhelm_c is a Go c-shared
            // library whose initializers only set up the Go runtime.
            let lib = unsafe { libloading::Library::new(path) }
                .map_err(|e| load_failed(path, "the library", e))?;
            let mut l = Library {
                lib,
                path: path.to_path_buf(),
                version: String::new(),
                sdk_version: String::new(),
            };
            for name in [
                "helm_free_string",
                "helm_chart_load",
                "helm_chart_load_archive",
                "helm_chart_free",
                "helm_render",
                "helm_chart_crds",
            ] {
                // SAFETY: only the presence of the symbol is checked here.
                unsafe { l.lib.get::<*const c_void>(name.as_bytes()) }.map_err(|_| {
                    load_err(
                        path,
                        format!("the library does not export `{name}`: it is not libhelm_c"),
                    )
                })?;
            }
            l.version = l.version_of(b"helm_c_version")?;
            l.sdk_version = l.version_of(b"helm_sdk_version")?;
            if !l.version.starts_with("0.") {
                return Err(load_err(
                    path,
                    format!("libhelm_c {} has an unknown ABI (expected 0.x)", l.version),
                ));
            }
            Ok(l)
        }

        fn version_of(&self, symbol: &'static [u8]) -> Result<String, KubeError> {
            // SAFETY: the declared signature is the one of helm_c.h (no arguments, an owned
            // string back).
            let f: Symbol<VersionFn> = unsafe { self.lib.get(symbol) }
                .map_err(|e| load_failed(&self.path, symbol_name(symbol), e))?;
            // SAFETY: calling a function with no arguments; the result is owned by us.
            let ptr = unsafe { f() };
            Ok(self.take(ptr).unwrap_or_else(|| "unknown".into()))
        }

        /// Copies and frees a library-owned string.
        fn take(&self, ptr: *mut c_char) -> Option<String> {
            if ptr.is_null() {
                return None;
            }
            // SAFETY: the library returns NUL-terminated UTF-8 strings it allocated.
            let s = unsafe { CStr::from_ptr(ptr) }
                .to_string_lossy()
                .into_owned();
            // SAFETY: the signature of helm_free_string; `ptr` came from this library and is
            // freed exactly once.
            if let Ok(free) = unsafe { self.lib.get::<FreeStringFn>(b"helm_free_string") } {
                unsafe { free(ptr.cast()) };
            }
            Some(s)
        }

        fn status(
            &self,
            code: i32,
            err: *mut c_char,
            chart: &str,
            step: &'static str,
        ) -> Result<(), KubeError> {
            let detail = self.take(err);
            if code == 0 {
                return Ok(());
            }
            Err(KubeError::HelmSdkCall {
                chart: chart.to_string(),
                step,
                code,
                detail: detail.unwrap_or_else(|| "no detail".into()),
            })
        }

        /// The function `symbol` of the library, typed as `T` (the caller's SAFETY comment
        /// vouches for the signature).
        ///
        /// # Safety
        ///
        /// `T` must be the signature `helm_c.h` declares for `symbol`.
        unsafe fn function<T>(
            &self,
            chart: &str,
            symbol: &'static [u8],
        ) -> Result<Symbol<'_, T>, KubeError> {
            // SAFETY: the caller guarantees the signature.
            unsafe { self.lib.get(symbol) }.map_err(|e| KubeError::HelmSdkLoad {
                chart: chart.to_string(),
                path: self.path.clone(),
                symbol: symbol_name(symbol),
                source: e,
            })
        }

        pub(super) fn render(
            &self,
            req: &ChartRequest,
        ) -> Result<Vec<(String, String)>, KubeError> {
            let chart = req.chart.name();
            let mut handle: u64 = 0;
            let mut err: *mut c_char = std::ptr::null_mut();
            match &req.chart {
                ChartSource::Archive { bytes, .. } => {
                    // SAFETY: signature from helm_c.h; `bytes` outlives the call (the library
                    // copies it).
                    let f: Symbol<LoadArchiveFn> =
                        unsafe { self.function(&chart, b"helm_chart_load_archive") }?;
                    let code =
                        unsafe { f(bytes.as_ptr(), bytes.len() as u64, &mut handle, &mut err) };
                    self.status(code, err, &chart, "loading the chart archive")?;
                }
                ChartSource::Directory(dir) => {
                    let path =
                        CString::new(dir.to_string_lossy().as_bytes()).map_err(|source| {
                            KubeError::HelmSdkInput {
                                chart: chart.clone(),
                                what: "the chart path",
                                source,
                            }
                        })?;
                    // SAFETY: signature from helm_c.h; `path` outlives the call.
                    let f: Symbol<LoadFn> = unsafe { self.function(&chart, b"helm_chart_load") }?;
                    let code = unsafe { f(path.as_ptr(), &mut handle, &mut err) };
                    self.status(code, err, &chart, "loading the chart directory")?;
                }
            }
            let result = self.render_loaded(handle, req, &chart);
            // SAFETY: signature from helm_c.h; the handle was returned by a load above.
            if let Ok(free) = unsafe { self.lib.get::<FreeFn>(b"helm_chart_free") } {
                let mut err: *mut c_char = std::ptr::null_mut();
                let _ = unsafe { free(handle, &mut err) };
                let _ = self.take(err);
            }
            result
        }

        fn render_loaded(
            &self,
            handle: u64,
            req: &ChartRequest,
            chart: &str,
        ) -> Result<Vec<(String, String)>, KubeError> {
            let mut out = Vec::new();
            // CRDs first, as Helm installs them.
            let mut crds: *mut c_char = std::ptr::null_mut();
            let mut err: *mut c_char = std::ptr::null_mut();
            // SAFETY: signature from helm_c.h; out-pointers are valid.
            let f: Symbol<ListFn> = unsafe { self.function(chart, b"helm_chart_crds") }?;
            let code = unsafe { f(handle, &mut crds, &mut err) };
            let crds = self.take(crds);
            self.status(code, err, chart, "reading the chart's CRDs")?;
            if let Some(text) = crds {
                let list: Vec<Value> =
                    serde_json::from_str(&text).map_err(|source| KubeError::HelmSdkOutput {
                        chart: chart.to_string(),
                        what: "unreadable CRDs",
                        source,
                    })?;
                for c in list {
                    let name = c["name"].as_str().unwrap_or("crds").to_string();
                    let data = c["data"].as_str().unwrap_or("").to_string();
                    out.push((name, data));
                }
            }
            let values =
                CString::new(req.values.to_string()).map_err(|source| KubeError::HelmSdkInput {
                    chart: chart.to_string(),
                    what: "the values",
                    source,
                })?;
            let opts = serde_json::json!({
                "name": req.release,
                "namespace": req.namespace,
                "is_install": true,
            });
            let opts =
                CString::new(opts.to_string()).map_err(|source| KubeError::HelmSdkInput {
                    chart: chart.to_string(),
                    what: "the release name",
                    source,
                })?;
            let mut rendered: *mut c_char = std::ptr::null_mut();
            let mut err: *mut c_char = std::ptr::null_mut();
            // SAFETY: signature from helm_c.h; inputs outlive the call, out-pointers are valid.
            let f: Symbol<RenderFn> = unsafe { self.function(chart, b"helm_render") }?;
            let code = unsafe {
                f(
                    handle,
                    values.as_ptr(),
                    opts.as_ptr(),
                    &mut rendered,
                    &mut err,
                )
            };
            let rendered = self.take(rendered);
            self.status(code, err, chart, "rendering")?;
            let map: serde_json::Map<String, Value> =
                serde_json::from_str(rendered.as_deref().unwrap_or("{}")).map_err(|source| {
                    KubeError::HelmSdkOutput {
                        chart: chart.to_string(),
                        what: "an unreadable rendering",
                        source,
                    }
                })?;
            for (path, text) in map {
                if let Some(t) = text.as_str() {
                    out.push((path, t.to_string()));
                }
            }
            Ok(out)
        }
    }
}

/// Sets `value` at the dotted `path` of `values` (`image.tag` -> `{"image": {"tag": ...}}`),
/// as `helm --set` does (without list indexes).
pub fn set_value(values: &mut Value, path: &str, value: Value) -> Result<(), KubeError> {
    let path = path.strip_prefix(".Values.").unwrap_or(path);
    let keys: Vec<&str> = path.split('.').collect();
    if keys.iter().any(|k| k.is_empty()) {
        return Err(KubeError::input(format!(
            "`{path}` is not a Helm value path (dotted keys, e.g. image.tag)"
        )));
    }
    let mut cur = values;
    for (i, k) in keys.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Default::default());
        }
        let Value::Object(m) = cur else {
            return Ok(());
        };
        if i + 1 == keys.len() {
            m.insert((*k).to_string(), value);
            return Ok(());
        }
        cur = m
            .entry((*k).to_string())
            .or_insert_with(|| Value::Object(Default::default()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn set_value_builds_nested_maps() {
        let mut v = json!({"image": {"repository": "nginx"}});
        set_value(&mut v, "image.tag", json!("1.25")).unwrap();
        set_value(&mut v, ".Values.service.port", json!(8081)).unwrap();
        set_value(&mut v, "replicaCountVdu1", json!(2)).unwrap();
        assert_eq!(
            v,
            json!({"image": {"repository": "nginx", "tag": "1.25"}, "service": {"port": 8081}, "replicaCountVdu1": 2})
        );
        assert!(set_value(&mut v, "a..b", json!(1)).is_err());
    }

    #[test]
    fn hooks_are_left_out_of_rendered_documents() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: batch/v1\nkind: Job\nmetadata:\n  name: t\n  annotations: {helm.sh/hook: test}\n";
        let docs = documents_of("c", "templates/x.yaml", text).unwrap();
        assert_eq!(docs.len(), 1);
        assert_eq!(docs[0].source, "c:templates/x.yaml");
    }
}
