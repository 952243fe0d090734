//! Where the resources live: the typed target of a `_links` entry ([`LinkTarget`]), the port
//! that turns a target into an `href` ([`ResourceLinks`]), and the SOL002/SOL003 URI layout
//! ([`SolLinks`], `{apiRoot}/{apiName}/{apiMajorVersion}/...`).
//!
//! The lifecycle core names what a link points at and asks the port for the `href`; the
//! composition root chooses the port (the SOL layout under a relative or absolute `apiRoot`).

use serde_json::Value;

/// The major version of an interface a resource is reached through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ApiVersion {
    /// SOL002/SOL003 v2.6.1 (`v1`).
    V1,
    /// SOL002/SOL003 v3.3.1 (`v2`).
    V2,
}

impl ApiVersion {
    /// The version's path segment (`v1`, `v2`).
    pub fn segment(self) -> &'static str {
        match self {
            ApiVersion::V1 => "v1",
            ApiVersion::V2 => "v2",
        }
    }
}

/// An interface of the VNFM whose resources carry links.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Interface {
    /// VNF lifecycle management (`vnflcm`).
    Lifecycle,
    /// VNF package management (`vnfpkgm`).
    Packages,
    /// VNF fault management (`vnffm`).
    Faults,
    /// VNF performance management (`vnfpm`).
    Performance,
    /// VNF indicators (`vnfind`).
    Indicators,
}

impl Interface {
    /// Every interface.
    pub const ALL: [Interface; 5] = [
        Interface::Lifecycle,
        Interface::Packages,
        Interface::Faults,
        Interface::Performance,
        Interface::Indicators,
    ];

    /// The interface's `apiName`.
    pub fn api_name(self) -> &'static str {
        match self {
            Interface::Lifecycle => "vnflcm",
            Interface::Packages => "vnfpkgm",
            Interface::Faults => "vnffm",
            Interface::Performance => "vnfpm",
            Interface::Indicators => "vnfind",
        }
    }
}

/// What a link points at: a resource by its kind, the interface version it is reached
/// through, and its ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkTarget<'a> {
    /// A VNF instance.
    Instance {
        /// The lifecycle interface's version.
        version: ApiVersion,
        /// The instance.
        id: &'a str,
    },
    /// A task resource of a VNF instance (`instantiate`, `scale`, ...).
    InstanceTask {
        /// The lifecycle interface's version.
        version: ApiVersion,
        /// The instance.
        id: &'a str,
        /// The task's resource name.
        task: &'a str,
    },
    /// A lifecycle operation occurrence.
    OpOcc {
        /// The lifecycle interface's version.
        version: ApiVersion,
        /// The occurrence.
        id: &'a str,
    },
    /// A task resource of an occurrence (`cancel`, `retry`, `rollback`, `fail`).
    OpOccTask {
        /// The lifecycle interface's version.
        version: ApiVersion,
        /// The occurrence.
        id: &'a str,
        /// The task's resource name.
        task: &'a str,
    },
    /// A subscription of an interface.
    Subscription {
        /// The interface.
        interface: Interface,
        /// Its version.
        version: ApiVersion,
        /// The subscription.
        id: &'a str,
    },
    /// An individual VNF package.
    Package {
        /// The package management interface's version.
        version: ApiVersion,
        /// The package.
        id: &'a str,
    },
    /// A resource of an individual VNF package (`vnfd`, `package_content`).
    PackagePart {
        /// The package management interface's version.
        version: ApiVersion,
        /// The package.
        id: &'a str,
        /// The resource's name.
        part: &'a str,
    },
    /// The alarms resource (`vnffm/v1`).
    Alarms,
    /// An alarm (`vnffm/v1`).
    Alarm {
        /// The alarm.
        id: &'a str,
    },
    /// The indicators of a VNF instance (`vnfind/v1`).
    InstanceIndicators {
        /// The instance.
        instance: &'a str,
    },
    /// An indicator of a VNF instance (`vnfind/v1`).
    Indicator {
        /// The instance.
        instance: &'a str,
        /// The indicator.
        indicator: &'a str,
    },
    /// A PM job.
    PmJob {
        /// The performance management interface's version.
        version: ApiVersion,
        /// The job.
        id: &'a str,
    },
    /// A performance report of a PM job.
    PmReport {
        /// The performance management interface's version.
        version: ApiVersion,
        /// The job.
        job: &'a str,
        /// The report.
        report: &'a str,
    },
    /// A threshold.
    Threshold {
        /// The performance management interface's version.
        version: ApiVersion,
        /// The threshold.
        id: &'a str,
    },
}

/// Turns link targets into `href`s, and reads back the version of an `href` it made (links
/// are stored with the resources, so a resource's interface version is the one of its
/// `_links.self`).
pub trait ResourceLinks: Send + Sync + std::fmt::Debug {
    /// The `href` of `target`.
    fn href(&self, target: LinkTarget<'_>) -> String;

    /// The interface version of `href`, a link this port made; `None` for any other text.
    fn version_of(&self, href: &str) -> Option<ApiVersion>;

    /// `href` moved to `version` of its interface (a link this port made), else unchanged.
    fn relink(&self, href: &str, version: ApiVersion) -> String;

    /// Every `href` in `doc` (at any depth) moved to `version` as [`ResourceLinks::relink`]
    /// does.
    fn relink_all(&self, doc: &mut Value, version: ApiVersion) {
        match doc {
            Value::Object(map) => {
                for (k, v) in map.iter_mut() {
                    match v {
                        Value::String(s) if k == "href" => *s = self.relink(s, version),
                        _ => self.relink_all(v, version),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| self.relink_all(i, version)),
            _ => {}
        }
    }
}

/// The SOL002/SOL003 URI layout, `{apiRoot}/{apiName}/{apiMajorVersion}/{resource}`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SolLinks {
    api_root: String,
}

impl SolLinks {
    /// Links under `api_root` (`https://vnfm.example:9890`; empty for links relative to the
    /// server, the default).
    pub fn new(api_root: impl Into<String>) -> Self {
        SolLinks {
            api_root: api_root.into().trim_end_matches('/').to_owned(),
        }
    }

    fn base(&self, interface: Interface, version: ApiVersion) -> String {
        format!(
            "{}/{}/{}",
            self.api_root,
            interface.api_name(),
            version.segment()
        )
    }

    /// The interface and version `href` starts with (after the `apiRoot`), and the rest.
    fn split<'h>(&self, href: &'h str) -> Option<(Interface, ApiVersion, &'h str)> {
        let path = href.strip_prefix(self.api_root.as_str())?;
        Interface::ALL.into_iter().find_map(|interface| {
            let rest = path
                .strip_prefix('/')?
                .strip_prefix(interface.api_name())?
                .strip_prefix('/')?;
            let (version, rest) = if let Some(rest) = rest.strip_prefix("v1") {
                (ApiVersion::V1, rest)
            } else {
                (ApiVersion::V2, rest.strip_prefix("v2")?)
            };
            (rest.is_empty() || rest.starts_with('/')).then_some((interface, version, rest))
        })
    }
}

impl ResourceLinks for SolLinks {
    fn href(&self, target: LinkTarget<'_>) -> String {
        use Interface::*;
        use LinkTarget as T;
        match target {
            T::Instance { version, id } => {
                format!("{}/vnf_instances/{id}", self.base(Lifecycle, version))
            }
            T::InstanceTask { version, id, task } => {
                format!(
                    "{}/vnf_instances/{id}/{task}",
                    self.base(Lifecycle, version)
                )
            }
            T::OpOcc { version, id } => {
                format!("{}/vnf_lcm_op_occs/{id}", self.base(Lifecycle, version))
            }
            T::OpOccTask { version, id, task } => {
                format!(
                    "{}/vnf_lcm_op_occs/{id}/{task}",
                    self.base(Lifecycle, version)
                )
            }
            T::Subscription {
                interface,
                version,
                id,
            } => format!("{}/subscriptions/{id}", self.base(interface, version)),
            T::Package { version, id } => {
                format!("{}/vnf_packages/{id}", self.base(Packages, version))
            }
            T::PackagePart { version, id, part } => {
                format!("{}/vnf_packages/{id}/{part}", self.base(Packages, version))
            }
            T::Alarms => format!("{}/alarms", self.base(Faults, ApiVersion::V1)),
            T::Alarm { id } => format!("{}/alarms/{id}", self.base(Faults, ApiVersion::V1)),
            T::InstanceIndicators { instance } => {
                format!(
                    "{}/indicators/{instance}",
                    self.base(Indicators, ApiVersion::V1)
                )
            }
            T::Indicator {
                instance,
                indicator,
            } => format!(
                "{}/indicators/{instance}/{indicator}",
                self.base(Indicators, ApiVersion::V1)
            ),
            T::PmJob { version, id } => format!("{}/pm_jobs/{id}", self.base(Performance, version)),
            T::PmReport {
                version,
                job,
                report,
            } => format!(
                "{}/pm_jobs/{job}/reports/{report}",
                self.base(Performance, version)
            ),
            T::Threshold { version, id } => {
                format!("{}/thresholds/{id}", self.base(Performance, version))
            }
        }
    }

    fn version_of(&self, href: &str) -> Option<ApiVersion> {
        self.split(href).map(|(_, version, _)| version)
    }

    fn relink(&self, href: &str, version: ApiVersion) -> String {
        match self.split(href) {
            Some((interface, _, rest)) => format!("{}{rest}", self.base(interface, version)),
            None => href.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_layout() {
        let links = SolLinks::default();
        assert_eq!(
            links.href(LinkTarget::InstanceTask {
                version: ApiVersion::V2,
                id: "i1",
                task: "scale"
            }),
            "/vnflcm/v2/vnf_instances/i1/scale"
        );
        assert_eq!(
            links.href(LinkTarget::PmReport {
                version: ApiVersion::V1,
                job: "j",
                report: "r"
            }),
            "/vnfpm/v1/pm_jobs/j/reports/r"
        );
        assert_eq!(links.href(LinkTarget::Alarms), "/vnffm/v1/alarms");
    }

    #[test]
    fn versions_are_read_back_and_moved() {
        let links = SolLinks::new("https://vnfm:9890/");
        let sub = links.href(LinkTarget::Subscription {
            interface: Interface::Packages,
            version: ApiVersion::V1,
            id: "s1",
        });
        assert_eq!(sub, "https://vnfm:9890/vnfpkgm/v1/subscriptions/s1");
        assert_eq!(links.version_of(&sub), Some(ApiVersion::V1));
        assert_eq!(
            links.relink(&sub, ApiVersion::V2),
            "https://vnfm:9890/vnfpkgm/v2/subscriptions/s1"
        );
        assert_eq!(links.version_of("/vnfpkgm/v1/subscriptions/s1"), None);
        assert_eq!(links.relink("/elsewhere", ApiVersion::V1), "/elsewhere");
        let mut doc = serde_json::json!({"_links": {"objects": [
            {"href": "https://vnfm:9890/vnflcm/v2/vnf_instances/i1"}]}});
        links.relink_all(&mut doc, ApiVersion::V1);
        assert_eq!(
            doc["_links"]["objects"][0]["href"],
            "https://vnfm:9890/vnflcm/v1/vnf_instances/i1"
        );
    }
}
