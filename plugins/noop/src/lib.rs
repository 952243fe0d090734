//! The no-op management driver: every hook succeeds and changes nothing.
//!
//! Bind it to hooks a VNFD must declare but that need no work (Tacker's `vnflcm_noop`).

use vnfm_plugin_sdk::{MgmtDriver, export_mgmt_driver};

/// A driver whose hooks all use the SDK's no-op defaults.
#[derive(Debug, Default)]
pub struct Noop;

impl MgmtDriver for Noop {}

export_mgmt_driver!(Noop);
