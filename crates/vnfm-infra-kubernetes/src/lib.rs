//! The Kubernetes infrastructure driver: deploys CNFs (Kubernetes manifests and Helm charts of
//! VNF packages) and ASD applications (deployment items in stages) on clusters registered as
//! VIMs of type `ETSINFV.KUBERNETES.V_1` or `ETSINFV.HELM.V_3`.
//!
//! [`KubernetesDriver`] implements the core's [`vnfm_driver_api::InfraDriver`]. It talks to the
//! API server with kube-rs only ([`cluster::Cluster`]), so tests against the emulated API
//! server (`vnfm-kube-emulator`) run exactly the code that runs against a real cluster.
//!
//! - [`access`]: the connection from a VIM's access info (token or basic auth, CA certificate
//!   or explicit insecure flag, default namespace), built in memory;
//! - [`manifest`]: multi-document YAML and `$VAR` / `${VAR}` placeholders;
//! - [`helm`]: the [`helm::HelmRenderer`] seam (the `helm` program, or the Helm SDK C library);
//! - [`plan`]: sources, namespace, labels, VDU mapping and replica counts;
//! - [`order`]: the apply order (and exact reverse for deletion);
//! - [`ready`]: readiness per kind, watched, and waits for deleted objects;
//! - [`watches`]: list/watch streams shared per cluster and kind by every step and the
//!   infrastructure watch;
//! - `requests`: access reviews and bindings, created once;
//! - [`inventory`]: pods and PVCs as `vnfcResourceInfo` and `virtualStorageResourceInfo`;
//! - [`asd`]: ASDs through the core, and the placement check;
//! - [`health`]: what is wrong with a pod or Deployment, reported when the core observes an
//!   instance outside operations (crash loops, image pulls, readiness, ...).
//!
//! ```no_run
//! use std::sync::Arc;
//! use vnfm_infra_kubernetes::KubernetesDriver;
//! # fn lcm_builder(_: Arc<dyn vnfm_driver_api::InfraDriver>) {}
//! let driver = KubernetesDriver::new();
//! lcm_builder(Arc::new(driver)); // e.g. vnfm_lcm::Lcm::builder(...).infra_driver(...)
//! ```
//!
//! The long guide (VIM registration, parameters, ordering, Helm, ASD) is `docs/kubernetes.md`.

pub mod access;
pub mod asd;
pub mod cluster;
mod driver;
mod error;
pub mod health;
pub mod helm;
pub mod inventory;
pub mod manifest;
pub mod order;
pub mod plan;
pub mod ready;
mod requests;
pub mod vim_kind;
pub mod watches;

pub use asd::asd_vnfd;
pub use driver::{
    DriverState, HELM_VIM_TYPE, KUBERNETES_VIM_TYPE, KubernetesDriver, Snapshot, StoppedWorkload,
};
pub use error::KubeError;
pub use helm::{ChartRequest, ChartSource, HelmBinary, HelmLibrary, HelmRenderer};
pub use vim_kind::KubernetesVimKind;
