//! [`OpenStackVimKind`]: how the core validates, stores and shows OpenStack VIM connections
//! (`ETSINFV.OPENSTACK_KEYSTONE.V_3`).
//!
//! | `interfaceInfo` | `accessInfo` |
//! |---|---|
//! | `endpoint` (Keystone v3 URL; alias `accessInfo/authUrl`), `ssl_ca_cert` (PEM; alias `caCert`) | `username` + **`password`**, or `applicationCredentialId` + **`applicationCredentialSecret`**; `project` (name) or `projectId`; `projectDomain` (with `project`), `userDomain` (with `username`), `region` |
//!
//! Secret members are in bold; other `accessInfo` members are refused.

use serde_json::Value;
use vnfm_driver_api::vim_kind::fields::{
    ca_cert, canonical_entry, endpoint, only_known, opt_str, required,
};
use vnfm_driver_api::{InvalidVimInfo, VimKind};
use vnfm_types::{KeyValuePairs, VimConnectionInfo};

use crate::driver::OPENSTACK_VIM_TYPE;

const ACCESS_MEMBERS: &[&str] = &[
    "username",
    "password",
    "applicationCredentialId",
    "applicationCredentialSecret",
    "project",
    "projectId",
    "projectDomain",
    "userDomain",
    "region",
    "authUrl",
];

/// The kind of [`OPENSTACK_VIM_TYPE`].
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenStackVimKind;

impl VimKind for OpenStackVimKind {
    fn vim_types(&self) -> &[&'static str] {
        &[OPENSTACK_VIM_TYPE]
    }

    /// OpenStack Tacker's names: `openstack` (its v1 guides and VIM files) and
    /// `ETSINFV.OPENSTACK_KEYSTONE.V_2` (its v1 API's requests, any case), both Keystone v3
    /// clouds here.
    fn aliases(&self) -> &[(&'static str, &'static str)] {
        &[
            ("openstack", OPENSTACK_VIM_TYPE),
            ("ETSINFV.OPENSTACK_KEYSTONE.V_2", OPENSTACK_VIM_TYPE),
            (OPENSTACK_VIM_TYPE, OPENSTACK_VIM_TYPE),
        ]
    }

    fn canonical(&self, info: &VimConnectionInfo) -> Result<VimConnectionInfo, InvalidVimInfo> {
        let empty = KeyValuePairs::new();
        let access = info.access_info.as_ref().unwrap_or(&empty);
        let iface = info.interface_info.as_ref().unwrap_or(&empty);
        only_known(access, ACCESS_MEMBERS)?;
        let s = |k: &str| opt_str(access, "accessInfo", &[k]);
        let endpoint = endpoint(iface, access)?;
        let ca_cert = ca_cert(iface)?;
        let username = s("username")?;
        let password = s("password")?;
        let app_id = s("applicationCredentialId")?;
        let app_secret = s("applicationCredentialSecret")?;
        let project = s("project")?;
        let project_id = s("projectId")?;
        let project_domain = s("projectDomain")?;
        let user_domain = s("userDomain")?;
        let region = s("region")?;
        let mut canonical = KeyValuePairs::new();
        let mut put = |k: &str, v: Option<String>| {
            if let Some(v) = v {
                canonical.insert(k.into(), Value::String(v));
            }
        };
        let password_given = username.is_some() || password.is_some();
        let app_given = app_id.is_some() || app_secret.is_some();
        match (password_given, app_given) {
            (true, true) => {
                return Err(InvalidVimInfo::new(
                    "/accessInfo/applicationCredentialId",
                    "give either username and password or applicationCredentialId and applicationCredentialSecret, not both",
                ));
            }
            (false, true) => {
                put(
                    "applicationCredentialId",
                    Some(required(
                        app_id,
                        "/accessInfo/applicationCredentialId",
                        "the id of the application credential",
                    )?),
                );
                put(
                    "applicationCredentialSecret",
                    Some(required(
                        app_secret,
                        "/accessInfo/applicationCredentialSecret",
                        "the secret of the application credential",
                    )?),
                );
            }
            _ => {
                let username = required(
                    username,
                    "/accessInfo/username",
                    "a user name and password, or an application credential",
                )?;
                let password = required(password, "/accessInfo/password", "the user's password")?;
                if user_domain.is_none() {
                    return Err(InvalidVimInfo::new(
                        "/accessInfo/userDomain",
                        "missing: the domain of the user (e.g. Default)",
                    ));
                }
                if project.is_none() && project_id.is_none() {
                    return Err(InvalidVimInfo::new(
                        "/accessInfo/project",
                        "missing: the project (name in project, or id in projectId) to scope to",
                    ));
                }
                put("username", Some(username));
                put("password", Some(password));
            }
        }
        if project.is_some() && project_id.is_some() {
            return Err(InvalidVimInfo::new(
                "/accessInfo/projectId",
                "give either project (a name) or projectId, not both",
            ));
        }
        if project.is_some() && project_domain.is_none() {
            return Err(InvalidVimInfo::new(
                "/accessInfo/projectDomain",
                "missing: the domain of the project named in project (e.g. Default)",
            ));
        }
        put("project", project);
        put("projectId", project_id);
        put("projectDomain", project_domain);
        put("userDomain", user_domain);
        put("region", region);
        Ok(canonical_entry(
            info,
            &endpoint,
            ca_cert.as_deref(),
            canonical,
        ))
    }

    fn secret_members(&self) -> &[&'static str] {
        &["password", "applicationCredentialSecret"]
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn info(v: Value) -> VimConnectionInfo {
        serde_json::from_value(v).unwrap()
    }

    fn os(access: Value) -> Value {
        json!({"vimType": OPENSTACK_VIM_TYPE,
               "interfaceInfo": {"endpoint": "https://keystone.example:5000/v3"},
               "accessInfo": access})
    }

    fn pointer(v: Value) -> String {
        OpenStackVimKind.canonical(&info(v)).unwrap_err().pointer
    }

    #[test]
    fn password_access_needs_user_domain_and_a_project() {
        let ok = json!({"username": "u", "password": "p", "userDomain": "Default",
                        "project": "demo", "projectDomain": "Default"});
        assert!(OpenStackVimKind.canonical(&info(os(ok.clone()))).is_ok());
        let mut no_domain = ok.clone();
        no_domain.as_object_mut().unwrap().remove("userDomain");
        assert_eq!(pointer(os(no_domain)), "/accessInfo/userDomain");
        let mut no_project = ok.clone();
        no_project.as_object_mut().unwrap().remove("project");
        assert_eq!(pointer(os(no_project)), "/accessInfo/project");
        let mut both = ok;
        both["projectId"] = json!("p1");
        assert_eq!(pointer(os(both)), "/accessInfo/projectId");
    }

    #[test]
    fn application_credentials_exclude_a_password_and_unknown_members_are_refused() {
        let app = OpenStackVimKind
            .canonical(&info(os(json!({"applicationCredentialId": "a",
                                     "applicationCredentialSecret": "s"}))))
            .unwrap();
        assert_eq!(app.access_info.unwrap()["applicationCredentialSecret"], "s");
        assert_eq!(
            pointer(os(json!({"applicationCredentialId": "a",
                              "applicationCredentialSecret": "s", "password": "p"}))),
            "/accessInfo/applicationCredentialId"
        );
        assert_eq!(pointer(os(json!({"apiKey": "k"}))), "/accessInfo/apiKey");
    }

    #[test]
    fn the_auth_url_alias_becomes_the_endpoint_and_bad_urls_are_refused() {
        // A CA is checked to be X.509 (vnfm-test-env's test CA).
        let ca = include_str!("../../vnfm-test-env/data/ca.pem");
        let v = json!({"vimType": OPENSTACK_VIM_TYPE, "interfaceInfo": {"caCert": ca},
                       "accessInfo": {"authUrl": "http://k:5000/v3", "applicationCredentialId": "a",
                                      "applicationCredentialSecret": "s"}});
        let c = OpenStackVimKind.canonical(&info(v)).unwrap();
        let iface = c.interface_info.unwrap();
        assert_eq!(iface["endpoint"], "http://k:5000/v3");
        assert!(iface.get("caCert").is_none());
        assert_eq!(iface["ssl_ca_cert"], ca);
        assert!(!c.access_info.unwrap().contains_key("authUrl"));
        let bad = json!({"vimType": OPENSTACK_VIM_TYPE, "interfaceInfo": {"endpoint": "ftp://k"},
                         "accessInfo": {"applicationCredentialId": "a", "applicationCredentialSecret": "s"}});
        assert_eq!(pointer(bad), "/interfaceInfo/endpoint");
    }
}
