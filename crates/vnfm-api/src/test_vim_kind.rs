//! The VIM kind of the test VIM type `TEST.NOOP.V_1` (`--enable-test-vim`), so that a test VIM
//! can be registered (`/vnfm/v1/vims`, `vnfm vim register`) and marked as a project's default:
//! Tacker's default-VIM flow (`{"flavourId": "simple"}` with no `vimConnectionInfo`) can then
//! be tried without any infrastructure. The test VIM reaches nothing, so it takes no
//! credentials: an `accessInfo` member is refused (it could be a secret stored in clear);
//! `interfaceInfo` and `extra` are kept as given.

use std::sync::Arc;

use vnfm_driver_api::{InvalidVimInfo, VimKind};
use vnfm_types::VimConnectionInfo;

use crate::state::TEST_VIM_TYPE;

/// The [`VimKind`] of the test VIM, for a composition root that registers
/// [`crate::test_vim_driver`].
pub fn test_vim_kind() -> Arc<dyn VimKind> {
    Arc::new(TestVimKind)
}

struct TestVimKind;

impl VimKind for TestVimKind {
    fn vim_types(&self) -> &[&'static str] {
        &[TEST_VIM_TYPE]
    }

    fn canonical(&self, info: &VimConnectionInfo) -> Result<VimConnectionInfo, InvalidVimInfo> {
        if let Some(member) = info.access_info.iter().flatten().next() {
            return Err(InvalidVimInfo::new(
                format!("/accessInfo/{}", member.0),
                format!(
                    "the test VIM ({TEST_VIM_TYPE}) takes no access information; leave accessInfo out"
                ),
            ));
        }
        let mut out = info.clone();
        out.access_info = None;
        Ok(out)
    }

    fn secret_members(&self) -> &[&'static str] {
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_vim_takes_no_credentials() {
        let info: VimConnectionInfo = serde_json::from_value(serde_json::json!({
            "vimType": TEST_VIM_TYPE, "extra": {"isDefault": true}, "accessInfo": {}
        }))
        .unwrap();
        let canonical = test_vim_kind().canonical(&info).unwrap();
        assert_eq!(canonical.access_info, None);
        assert_eq!(canonical.extra, info.extra);
        let mut with_password = info;
        with_password.access_info =
            Some(serde_json::from_value(serde_json::json!({"password": "x"})).unwrap());
        let e = test_vim_kind().canonical(&with_password).unwrap_err();
        assert_eq!(e.pointer, "/accessInfo/password");
    }
}
