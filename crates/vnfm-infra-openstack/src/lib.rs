//! The OpenStack infrastructure driver: VM-based VNFs on VIMs of type
//! `ETSINFV.OPENSTACK_KEYSTONE.V_3`, through Keystone v3 and Heat.
//!
//! - [`OpenStackDriver`] ([`driver`]): the [`vnfm_driver_api::InfraDriver`]; one Heat stack
//!   per VNF instance, made from the package's BaseHOT ([`hot`]) or from the VNFD
//!   ([`generate`]), with the `nfv` parameter convention Tacker packages use.
//! - [`depends`]: nested stacks ordered after the subnets of the networks they are given.
//! - [`userdata`]: Tacker's user data classes; `StandardUserData`'s one resource per VNFC
//!   (`VDU1-0`, `VDU1-1`, ...) built natively; any other class of the package run through a
//!   [`vnfm_driver_api::UserDataScripts`] given with
//!   [`OpenStackDriver::with_user_data_scripts`].
//! - [`capacity`]: autoscaling groups of a constant size read their instance count from `nfv`.
//! - [`keystone`]: authentication (password, application credential), token cache with
//!   re-authentication, endpoint selection from the service catalog, retries.
//! - [`glance`]: the package's software images uploaded to (or found in) Glance at
//!   instantiate, removed when no instance uses them.
//! - [`heat`]: the Heat API client: stacks, resources, events, waiting with backoff.
//! - [`nova`]: the Nova compute API client for the operate step: server power actions
//!   (`os-start`, `os-stop`) and waiting for `ACTIVE` / `SHUTOFF`.
//! - [`neutron`]: the Neutron networking API client for the ports a template change would
//!   leave on a subnet it replaces.
//! - [`observe`]: what is wrong with an instance's stack outside operations (servers in
//!   `ERROR`, failed resources), reported for the core to raise as alarms.
//! - [`ext_links`]: the external virtual links in force from one operation to the next, a
//!   request's links laid over them, and their link ports (the request's and the stack's).
//! - [`inventory`]: `vnfcResourceInfo`, `vnfVirtualLinkResourceInfo`,
//!   `virtualStorageResourceInfo`, external CPs and links, read from the stack's resources.
//! - [`config`]: the driver's settings and the VIM connection layout it reads.
//! - [`OpenStackError`] ([`error`]): what failed; converts into
//!   [`vnfm_driver_api::DriverError`].
//!
//! The HTTP client uses rustls without a built-in crypto provider: install the ring provider
//! once at the start of the program (`rustls::crypto::ring::default_provider().install_default()`).
//!
//! ```no_run
//! use std::sync::Arc;
//! use vnfm_infra_openstack::{DriverConfig, OpenStackDriver};
//!
//! let driver = Arc::new(OpenStackDriver::new(DriverConfig::default()));
//! // Hand it to the lifecycle runner, e.g. `vnfm::lcm::builder().infra_driver(driver)`.
//! # let _ = driver;
//! ```
//!
//! See `docs/openstack.md` for VIM registration, the BaseHOT conventions, the generated
//! template and timeouts.

pub mod capacity;
pub mod config;
pub mod depends;
pub mod driver;
pub mod error;
pub mod ext_links;
pub mod generate;
pub mod glance;
pub mod heat;
pub mod hot;
pub mod inventory;
pub mod keystone;
pub mod neutron;
pub mod nova;
pub mod observe;
pub mod userdata;
pub mod vim_kind;

pub use config::{DriverConfig, PollPolicy, RetryPolicy, VimSettings};
pub use driver::{DriverState, OPENSTACK_VIM_TYPE, OpenStackDriver};
pub use error::OpenStackError;
pub use vim_kind::OpenStackVimKind;
