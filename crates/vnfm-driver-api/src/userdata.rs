//! The user data port: running a package's own user data class (OpenStack Tacker's
//! `lcm-operation-user-data` / `lcm-operation-user-data-class`), which turns an LCM request
//! into the contents of a Heat stack.
//!
//! Tacker's OpenStack driver runs the class named by a request's `additionalParams` in a
//! Python process: the class's static method named after the operation (`instantiate`,
//! `scale`, `heal`, `change_ext_conn`, `change_vnfpkg`, `scale_rollback`, ...) is called with
//! the request, the instance, the grant request, the grant and a directory holding the
//! package files, and answers a dict of stack fields (`template`, `files`, `parameters`).
//! An infrastructure driver that honours such classes asks a [`UserDataScripts`] to run the
//! call ([`UserDataCall`]) and applies the answer itself; how the class runs (which
//! interpreter, in which directory, with which environment) is the implementation's. The
//! script management driver (`vnfm-mgmt-script`) implements it.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use vnfm_descriptor::Vnfd;
use vnfm_types::VnfLcmOpOccId;

use crate::{ArtifactSource, DriverError, ResolvedVim, RunControl};

/// One call of a method of a user data class.
///
/// `Debug` leaves out the request, the instance, the grant request and the grant (they may
/// hold credentials) and redacts the VIM connections.
#[derive(Clone)]
pub struct UserDataCall {
    /// The operation occurrence.
    pub op_occ_id: VnfLcmOpOccId,
    /// The file holding the class, as the request names it (`./UserData/userdata.py`): a
    /// path inside the package.
    pub file: String,
    /// The class (`UserData`).
    pub class: String,
    /// The static method to call: the LCM operation in lower case (`instantiate`, `scale`,
    /// `heal`, `change_ext_conn`, `change_vnfpkg`, ...), with `_rollback` appended in a
    /// rollback (`scale_rollback`).
    pub method: String,
    /// The LCM request body (SOL003 JSON), Tacker's `req`.
    pub request: serde_json::Value,
    /// The VNF instance as recorded before the step (SOL003 JSON), Tacker's `inst`.
    pub instance: serde_json::Value,
    /// The grant request of the occurrence (SOL003 JSON), `null` when it asked for none.
    pub grant_request: serde_json::Value,
    /// The grant of the occurrence (SOL003 JSON), `null` when it has none.
    pub grant: serde_json::Value,
    /// The VNFD of the package the class comes from (for CHANGE_VNFPKG, the new package).
    pub vnfd: Arc<Vnfd>,
    /// The files of that package (the class's file among them).
    pub artifacts: Arc<dyn ArtifactSource>,
    /// The instance's VIM connections, with secrets.
    pub vims: Vec<ResolvedVim>,
    /// Deadline and cancellation.
    pub control: RunControl,
}

impl UserDataCall {
    /// `<class>.<method>` of `<file>`, for messages.
    pub fn describe(&self) -> String {
        format!(
            "user data class `{}` of `{}` (method `{}`)",
            self.class, self.file, self.method
        )
    }
}

impl fmt::Debug for UserDataCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UserDataCall")
            .field("op_occ_id", &self.op_occ_id)
            .field("file", &self.file)
            .field("class", &self.class)
            .field("method", &self.method)
            .field("vnfd_id", &self.vnfd.descriptor_id)
            .field("vims", &self.vims)
            .field("control", &self.control)
            .finish_non_exhaustive()
    }
}

/// Runs methods of user data classes.
#[async_trait]
pub trait UserDataScripts: Send + Sync {
    /// Calls `call.method` of `call.class` and answers what it returned, as JSON (a dict of
    /// stack fields for Tacker's classes; the caller checks its shape). A failure names the
    /// file, the class and the method, and says what went wrong (the exit status and the
    /// last lines of the error output of a process, with the VIMs' secrets redacted).
    async fn run(&self, call: &UserDataCall) -> Result<serde_json::Value, DriverError>;
}
