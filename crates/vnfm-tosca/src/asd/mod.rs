//! Application Service Descriptor reading.

use crate::{Loaded, PackageFiles};
use vnfm_descriptor::Diagnostic;

/// Reads the ASD of a package.
pub fn load(_files: &dyn PackageFiles) -> Loaded {
    Loaded {
        descriptor: None,
        diagnostics: vec![Diagnostic::error(
            "asd.unsupported",
            "ASD reading is not available",
        )],
    }
}
