//! The VIM-kind port: what the core must know about a family of VIM types without knowing
//! any of them.
//!
//! The core keeps VIM connections (registered VIMs, inline credentials of requests) with their
//! secrets sealed. To do that for a `vimType` it asks that type's [`VimKind`]: is this
//! `vimConnectionInfo` valid, what is its canonical layout (aliases folded, so equal content
//! compares equal), which `accessInfo` members are secret, and whether its VIMs run
//! containers (how mixed VNFs place their VDUs). Each infrastructure driver crate provides
//! the kind of the VIM types it serves ([`crate::InfraDriver::vim_kind`]); adding a VIM type
//! touches no core code.
//!
//! [`fields`] holds the checks kinds share (string members, endpoint URLs, CA certificates,
//! unknown members), so every kind reports errors the same way: a JSON pointer relative to the
//! `vimConnectionInfo` entry (`/accessInfo/password`) and what to do.

use std::collections::BTreeMap;
use std::sync::Arc;

use vnfm_types::VimConnectionInfo;

/// A `vimConnectionInfo` that its kind refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {message}")]
pub struct InvalidVimInfo {
    /// JSON pointer to the offending member, relative to the entry (`/accessInfo/password`).
    pub pointer: String,
    /// What is wrong and what to give instead.
    pub message: String,
}

impl InvalidVimInfo {
    /// An error at `pointer` saying `message`.
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> InvalidVimInfo {
        InvalidVimInfo {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// A family of VIM types as the core sees it.
pub trait VimKind: Send + Sync {
    /// The `vimType`s of this kind (e.g. `ETSINFV.KUBERNETES.V_1`, `ETSINFV.HELM.V_3`).
    fn vim_types(&self) -> &[&'static str];

    /// Validates `info` (one of [`VimKind::vim_types`]) and returns it in the canonical layout
    /// the core stores: aliases folded into one name, secrets included.
    fn canonical(&self, info: &VimConnectionInfo) -> Result<VimConnectionInfo, InvalidVimInfo>;

    /// The `accessInfo` members (canonical names) whose values are secret: sealed at rest and
    /// shown as `"***"`.
    fn secret_members(&self) -> &[&'static str];

    /// Whether VIMs of this kind run containers rather than virtual machines (a mixed VNF
    /// places its container VDUs on them).
    fn runs_containers(&self) -> bool {
        false
    }

    /// Other names requests use for this kind's types, each with the type it means
    /// (`("kubernetes", "ETSINFV.KUBERNETES.V_1")`: OpenStack Tacker's guides use such legacy
    /// names). Matched without regard to case; the core stores the type it means.
    fn aliases(&self) -> &[(&'static str, &'static str)] {
        &[]
    }
}

/// The type of `kind` that `vim_type` names: one of its types (exactly), or one its
/// [`VimKind::aliases`] maps it to (case-insensitively); `None` when it names none of them.
pub fn type_named(kind: &dyn VimKind, vim_type: &str) -> Option<&'static str> {
    if let Some(t) = kind.vim_types().iter().find(|t| **t == vim_type) {
        return Some(t);
    }
    kind.aliases()
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(vim_type))
        .map(|(_, t)| *t)
}

/// Why [`VimKinds::canonical`] refused a `vimConnectionInfo`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VimKindError {
    /// No kind serves the `vimType`.
    #[error("VIM type `{vim_type}` is not supported; supported types: {}", supported.join(", "))]
    Unsupported {
        /// The `vimType` given (cut when long).
        vim_type: String,
        /// The supported types.
        supported: Vec<String>,
    },
    /// The kind refused the content.
    #[error(transparent)]
    Invalid(#[from] InvalidVimInfo),
}

/// The VIM kinds the VNFM knows, by `vimType`.
#[derive(Clone, Default)]
pub struct VimKinds {
    by_type: BTreeMap<&'static str, Arc<dyn VimKind>>,
}

impl std::fmt::Debug for VimKinds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.by_type.keys()).finish()
    }
}

impl VimKinds {
    /// No kinds: every `vimType` is unsupported.
    pub fn new() -> VimKinds {
        VimKinds::default()
    }

    /// Adds `kind` for each of its types (a later kind replaces an earlier one's type).
    pub fn with(mut self, kind: Arc<dyn VimKind>) -> VimKinds {
        self.add(kind);
        self
    }

    /// Adds `kind` for each of its types.
    pub fn add(&mut self, kind: Arc<dyn VimKind>) {
        for t in kind.vim_types() {
            self.by_type.insert(t, kind.clone());
        }
    }

    /// Adds `other`'s kinds (replacing this one's for the types both have).
    pub fn extend(&mut self, other: VimKinds) {
        self.by_type.extend(other.by_type);
    }

    /// The kinds of the VIM types `drivers` serve (those that declare one).
    pub fn of_drivers<'a>(
        drivers: impl IntoIterator<Item = &'a Arc<dyn crate::InfraDriver>>,
    ) -> VimKinds {
        let mut kinds = VimKinds::new();
        for d in drivers {
            if let Some(k) = d.vim_kind() {
                kinds.add(k);
            }
        }
        kinds
    }

    /// The kind of `vim_type` (one of the kinds' types or aliases).
    pub fn get(&self, vim_type: &str) -> Option<&Arc<dyn VimKind>> {
        self.by_type.get(self.type_named(vim_type)?)
    }

    /// The type `vim_type` names: itself when a kind serves it, the type an alias means, or
    /// `None`.
    pub fn type_named(&self, vim_type: &str) -> Option<&'static str> {
        if let Some((t, _)) = self.by_type.get_key_value(vim_type) {
            return Some(t);
        }
        self.by_type
            .values()
            .find_map(|k| type_named(&**k, vim_type))
    }

    /// The supported `vimType`s, sorted.
    pub fn vim_types(&self) -> Vec<&'static str> {
        self.by_type.keys().copied().collect()
    }

    /// `info` validated and in its kind's canonical layout (an alias replaced by the type it
    /// means).
    pub fn canonical(&self, info: &VimConnectionInfo) -> Result<VimConnectionInfo, VimKindError> {
        match self.type_named(&info.vim_type) {
            Some(vim_type) => {
                let named = VimConnectionInfo {
                    vim_type: vim_type.to_owned(),
                    ..info.clone()
                };
                Ok(self.by_type[vim_type].canonical(&named)?)
            }
            None => Err(VimKindError::Unsupported {
                vim_type: fields::echo(&info.vim_type),
                supported: self.vim_types().into_iter().map(str::to_owned).collect(),
            }),
        }
    }

    /// The secret `accessInfo` members of `vim_type` (none when unknown).
    pub fn secret_members(&self, vim_type: &str) -> &[&'static str] {
        self.get(vim_type).map_or(&[], |k| k.secret_members())
    }

    /// Whether `vim_type`'s VIMs run containers.
    pub fn runs_containers(&self, vim_type: &str) -> bool {
        self.get(vim_type).is_some_and(|k| k.runs_containers())
    }

    /// The `vimType`s whose VIMs run containers, sorted.
    pub fn container_types(&self) -> Vec<&'static str> {
        self.by_type
            .iter()
            .filter(|(_, k)| k.runs_containers())
            .map(|(t, _)| *t)
            .collect()
    }
}

/// Checks of `vimConnectionInfo` members shared by the VIM kinds.
pub mod fields {
    use serde_json::Value;
    use vnfm_types::KeyValuePairs;

    use super::InvalidVimInfo;

    /// The longest stretch of input an error message repeats.
    const MAX_ECHO: usize = 80;

    /// `s` cut to 80 characters (an error repeats input, which may be huge).
    pub fn echo(s: &str) -> String {
        match s.char_indices().nth(MAX_ECHO) {
            Some((i, _)) => format!("{}…", &s[..i]),
            None => s.to_owned(),
        }
    }

    /// RFC 6901 escaping of one reference token (cut, since it echoes input).
    pub fn pointer_token(k: &str) -> String {
        echo(&k.replace('~', "~0").replace('/', "~1"))
    }

    /// Refuses `accessInfo` members not in `known` (they could be secrets that would
    /// otherwise be stored in clear).
    pub fn only_known(access: &KeyValuePairs, known: &[&str]) -> Result<(), InvalidVimInfo> {
        if let Some(k) = access.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(InvalidVimInfo::new(
                format!("/accessInfo/{}", pointer_token(k)),
                format!("unknown attribute; allowed: {}", known.join(", ")),
            ));
        }
        Ok(())
    }

    /// The first of `keys` present in `map` (section `section` of the entry) as a non-empty
    /// string, or `None` when none is present. `null` counts as absent.
    pub fn opt_str(
        map: &KeyValuePairs,
        section: &str,
        keys: &[&str],
    ) -> Result<Option<String>, InvalidVimInfo> {
        for key in keys {
            match map.get(*key) {
                None | Some(Value::Null) => continue,
                Some(Value::String(s)) if !s.trim().is_empty() => return Ok(Some(s.clone())),
                Some(Value::String(_)) => {
                    return Err(InvalidVimInfo::new(
                        format!("/{section}/{key}"),
                        "must not be empty",
                    ));
                }
                Some(_) => {
                    return Err(InvalidVimInfo::new(
                        format!("/{section}/{key}"),
                        "must be a string",
                    ));
                }
            }
        }
        Ok(None)
    }

    /// `value`, or an error at `pointer` saying what is missing (`why`).
    pub fn required(
        value: Option<String>,
        pointer: &str,
        why: &str,
    ) -> Result<String, InvalidVimInfo> {
        value.ok_or_else(|| InvalidVimInfo::new(pointer, format!("missing: {why}")))
    }

    /// The PEM CA certificate(s) of `interfaceInfo` (`ssl_ca_cert`, alias `caCert`), checked
    /// and in canonical PEM (each certificate's base64 in lines of 64 characters, nothing
    /// between certificates).
    ///
    /// OpenStack Tacker's VIM files are accepted as they are: `"None"` (what its
    /// `gen_vim_config.sh` writes when there is no CA) means no certificate, and a PEM whose
    /// line breaks YAML folded into spaces (a multi-line double-quoted string) is repaired.
    /// Errors say which certificate is wrong and why, never its bytes.
    pub fn ca_cert(iface: &KeyValuePairs) -> Result<Option<String>, InvalidVimInfo> {
        let Some(ca) = opt_str(iface, "interfaceInfo", &["ssl_ca_cert", "caCert"])? else {
            return Ok(None);
        };
        if ca.trim().eq_ignore_ascii_case("none") {
            return Ok(None);
        }
        canonical_pem(&ca)
            .map(Some)
            .map_err(|message| InvalidVimInfo::new("/interfaceInfo/ssl_ca_cert", message))
    }

    const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
    const END: &str = "-----END CERTIFICATE-----";

    /// `text`'s certificates in canonical PEM, each checked to be an X.509 certificate that
    /// can be trusted as a CA.
    fn canonical_pem(text: &str) -> Result<String, String> {
        use base64::Engine as _;
        let mut out = String::new();
        let mut rest = text;
        let mut n = 0;
        while let Some(start) = rest.find(BEGIN) {
            n += 1;
            let after = &rest[start + BEGIN.len()..];
            let Some(len) = after.find(END) else {
                return Err(format!(
                    "certificate {n} has no `{END}` line; give the whole PEM certificate"
                ));
            };
            // Line breaks folded into spaces (or kept) are all whitespace of the base64 body.
            let body: String = after[..len]
                .chars()
                .filter(|c| !c.is_whitespace())
                .collect();
            let der = base64::engine::general_purpose::STANDARD
                .decode(&body)
                .map_err(|_| format!("certificate {n} is not base64 between its PEM lines"))?;
            let cert = rustls_pki_types::CertificateDer::from(der);
            webpki::anchor_from_trusted_cert(&cert).map_err(|e| {
                format!("certificate {n} is not an X.509 certificate a client can trust ({e:?})")
            })?;
            out.push_str(BEGIN);
            out.push('\n');
            for line in body.as_bytes().chunks(64) {
                out.push_str(std::str::from_utf8(line).unwrap_or_default());
                out.push('\n');
            }
            out.push_str(END);
            out.push('\n');
            rest = &after[len + END.len()..];
        }
        if n == 0 {
            return Err(format!(
                "must be one or more PEM certificates ({BEGIN} ... {END}), or \"None\" for none"
            ));
        }
        Ok(out)
    }

    /// The API endpoint: `interfaceInfo/endpoint`, or `accessInfo/authUrl`; an http(s) URL.
    pub fn endpoint(
        iface: &KeyValuePairs,
        access: &KeyValuePairs,
    ) -> Result<String, InvalidVimInfo> {
        let (value, pointer) = match opt_str(iface, "interfaceInfo", &["endpoint"])? {
            Some(e) => (e, "/interfaceInfo/endpoint"),
            None => match opt_str(access, "accessInfo", &["authUrl"])? {
                Some(e) => (e, "/accessInfo/authUrl"),
                None => {
                    return Err(InvalidVimInfo::new(
                        "/interfaceInfo/endpoint",
                        "missing: the URL of the VIM's API endpoint",
                    ));
                }
            },
        };
        match url::Url::parse(&value) {
            Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(value),
            _ => Err(InvalidVimInfo::new(
                pointer,
                format!("`{}` is not an http(s) URL", echo(&value)),
            )),
        }
    }

    /// `info` with `interfaceInfo` holding `endpoint` and `ca_cert` under their canonical
    /// names (`caCert` folded into `ssl_ca_cert`) and `accessInfo` replaced by `access`.
    pub fn canonical_entry(
        info: &vnfm_types::VimConnectionInfo,
        endpoint: &str,
        ca_cert: Option<&str>,
        access: KeyValuePairs,
    ) -> vnfm_types::VimConnectionInfo {
        let mut iface = info.interface_info.clone().unwrap_or_default();
        iface.remove("caCert");
        iface.insert("endpoint".into(), Value::String(endpoint.to_owned()));
        match ca_cert {
            Some(c) => iface.insert("ssl_ca_cert".into(), Value::String(c.to_owned())),
            None => iface.remove("ssl_ca_cert"),
        };
        vnfm_types::VimConnectionInfo {
            vim_id: info.vim_id.clone(),
            vim_type: info.vim_type.clone(),
            interface_info: Some(iface),
            access_info: Some(access),
            extra: info.extra.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use vnfm_types::KeyValuePairs;

    use super::fields::ca_cert;
    use super::*;

    fn iface(ca: &str) -> KeyValuePairs {
        serde_json::from_value(json!({"ssl_ca_cert": ca})).unwrap()
    }

    #[test]
    fn a_ca_whose_line_breaks_yaml_folded_into_spaces_is_stored_as_it_was_issued() {
        let folded = vnfm_test_env::CA_PEM.trim_end().replace('\n', " ");
        let two = format!("{folded} {folded}");
        assert_eq!(
            ca_cert(&iface(&folded)).unwrap().as_deref(),
            Some(vnfm_test_env::CA_PEM)
        );
        assert_eq!(
            ca_cert(&iface(&two)).unwrap().unwrap(),
            vnfm_test_env::CA_PEM.repeat(2)
        );
        // Already canonical: unchanged.
        assert_eq!(
            ca_cert(&iface(vnfm_test_env::CA_PEM)).unwrap().as_deref(),
            Some(vnfm_test_env::CA_PEM)
        );
    }

    #[test]
    fn tackers_none_means_no_ca() {
        assert_eq!(ca_cert(&iface("None")).unwrap(), None);
        assert_eq!(ca_cert(&KeyValuePairs::new()).unwrap(), None);
    }

    #[test]
    fn a_broken_ca_is_refused_naming_the_certificate_without_its_bytes() {
        let body = "MIIBszCCAVmgAwIBAgIUQ0E=";
        let not_x509 = format!(
            "{}-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----\n",
            vnfm_test_env::CA_PEM
        );
        let e = ca_cert(&iface(&not_x509)).unwrap_err();
        assert_eq!(e.pointer, "/interfaceInfo/ssl_ca_cert");
        assert!(
            e.message.starts_with("certificate 2 is not an X.509"),
            "{e}"
        );
        assert!(!e.message.contains(body), "{e}");

        let e = ca_cert(&iface(
            "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----",
        ))
        .unwrap_err();
        assert!(e.message.contains("certificate 1 is not base64"), "{e}");
        assert!(!e.message.contains("not base64!"), "{e}");

        let e = ca_cert(&iface("-----BEGIN CERTIFICATE----- MIIB")).unwrap_err();
        assert!(e.message.contains("no `-----END CERTIFICATE-----`"), "{e}");
        let e = ca_cert(&iface("a file name")).unwrap_err();
        assert!(e.message.contains("\"None\""), "{e}");
    }

    struct Kube;
    impl VimKind for Kube {
        fn vim_types(&self) -> &[&'static str] {
            &["ETSINFV.KUBERNETES.V_1"]
        }
        fn canonical(&self, info: &VimConnectionInfo) -> Result<VimConnectionInfo, InvalidVimInfo> {
            Ok(info.clone())
        }
        fn secret_members(&self) -> &[&'static str] {
            &[]
        }
        fn aliases(&self) -> &[(&'static str, &'static str)] {
            &[("kubernetes", "ETSINFV.KUBERNETES.V_1")]
        }
    }

    #[test]
    fn an_alias_names_its_type_in_any_case_and_is_stored_as_the_type() {
        let kinds = VimKinds::new().with(Arc::new(Kube));
        assert_eq!(
            kinds.type_named("Kubernetes"),
            Some("ETSINFV.KUBERNETES.V_1")
        );
        assert_eq!(
            kinds.type_named("ETSINFV.KUBERNETES.V_1"),
            Some("ETSINFV.KUBERNETES.V_1")
        );
        // The types themselves are exact unless a kind lists them as aliases too.
        assert_eq!(kinds.type_named("etsinfv.kubernetes.v_1"), None);
        assert_eq!(kinds.type_named("openstack"), None);
        let info: VimConnectionInfo =
            serde_json::from_value(json!({"vimType": "kubernetes"})).unwrap();
        assert_eq!(
            kinds.canonical(&info).unwrap().vim_type,
            "ETSINFV.KUBERNETES.V_1"
        );
    }
}
