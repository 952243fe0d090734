//! The performance metrics of SOL003 / ETSI GS NFV-IFA 027 and the PromQL that measures
//! each of them on each object type.
//!
//! A [`PmCatalogue`] holds one PromQL template per ([`PmMetric`], [`PmObjectType`]): the
//! defaults (listed in the [crate documentation](crate#default-promql-of-the-performance-metrics)),
//! with any of them replaced, or new pairs added, from configuration
//! ([`PromqlOverrides`], a map metric name → object type → template, as YAML or JSON):
//!
//! ```
//! use std::time::Duration;
//! use vnfm_prometheus::{PmCatalogue, PmObjectType, PmTarget, PromqlOverrides};
//!
//! let overrides: PromqlOverrides = serde_json::from_str(r#"{
//!     "VCpuUsageMeanVnf": {"Vnf": "avg(avg_over_time(vm_cpu_percent{vnf=\"${object_instance_id}\"}[${collection_period}]))"}
//! }"#).unwrap();
//! let catalogue = PmCatalogue::with_overrides(&overrides)?;
//! let promql = catalogue.promql(
//!     "VCpuUsageMeanVnf",
//!     PmObjectType::Vnf,
//!     &PmTarget { object_instance_id: "a8c5", sub_object_instance_ids: &[], collection_period: Duration::from_secs(300) },
//! )?;
//! assert_eq!(promql, r#"avg(avg_over_time(vm_cpu_percent{vnf="a8c5"}[300s]))"#);
//!
//! let unknown = catalogue.promql("VCpuUsage", PmObjectType::Vnf, &PmTarget {
//!     object_instance_id: "a8c5", sub_object_instance_ids: &[], collection_period: Duration::from_secs(60),
//! }).unwrap_err();
//! assert!(unknown.to_string().contains("VCpuUsageMeanVnf, VCpuUsagePeakVnf"));
//! # Ok::<(), vnfm_prometheus::Error>(())
//! ```
//!
//! A template may use three placeholders, filled in per query:
//!
//! - `${object_instance_id}`: the measured object's id (the VNF instance), escaped for a
//!   double-quoted PromQL string;
//! - `${sub_object_instance_ids}`: a regular expression matching exactly the sub-object ids
//!   (VNFC or connection point instances), escaped for a double-quoted string, or `.+` when
//!   none are given (all of them); for use with `=~`;
//! - `${collection_period}`: the collection period as a PromQL duration (`300s`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

pub use vnfm_types::PmObjectType;

use crate::Error;

macro_rules! metrics {
    ($($variant:ident: $doc:literal),* $(,)?) => {
        /// A performance metric of ETSI GS NFV-IFA 027 that SOL003 PM jobs and thresholds
        /// name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum PmMetric {
            $(#[doc = $doc] $variant,)*
        }

        impl PmMetric {
            /// Every metric, in catalogue order.
            pub const ALL: &'static [PmMetric] = &[$(PmMetric::$variant),*];

            /// The metric's name (`VCpuUsageMeanVnf`, ...).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(PmMetric::$variant => stringify!($variant),)*
                }
            }
        }
    };
}

metrics! {
    VCpuUsageMeanVnf: "Mean virtual CPU usage over the collection period (percent).",
    VCpuUsagePeakVnf: "Peak virtual CPU usage over the collection period (percent).",
    VMemoryUsageMeanVnf: "Mean memory usage over the collection period (percent).",
    VMemoryUsagePeakVnf: "Peak memory usage over the collection period (percent).",
    VDiskUsageMeanVnf: "Mean disk usage over the collection period (percent).",
    VDiskUsagePeakVnf: "Peak disk usage over the collection period (percent).",
    ByteIncomingVnfIntCp: "Bytes received on internal connection points in the collection period.",
    ByteOutgoingVnfIntCp: "Bytes sent on internal connection points in the collection period.",
    PacketIncomingVnfIntCp: "Packets received on internal connection points in the collection period.",
    PacketOutgoingVnfIntCp: "Packets sent on internal connection points in the collection period.",
    ByteIncomingVnfExtCp: "Bytes received on external connection points in the collection period.",
    ByteOutgoingVnfExtCp: "Bytes sent on external connection points in the collection period.",
    PacketIncomingVnfExtCp: "Packets received on external connection points in the collection period.",
    PacketOutgoingVnfExtCp: "Packets sent on external connection points in the collection period.",
}

impl fmt::Display for PmMetric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PmMetric {
    type Err = Error;

    /// A metric name; a suffix after the first `.` (SOL003's `VCpuUsageMeanVnf.<id>` form)
    /// is ignored.
    fn from_str(s: &str) -> Result<Self, Error> {
        let name = s.split('.').next().unwrap_or(s);
        PmMetric::ALL
            .iter()
            .copied()
            .find(|m| m.as_str() == name)
            .ok_or_else(|| Error::UnknownMetric {
                name: s.into(),
                known: PmMetric::ALL
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// PromQL templates from configuration: metric name → object type name → template. Each
/// entry replaces the default of its pair or adds a pair.
pub type PromqlOverrides = BTreeMap<String, BTreeMap<String, String>>;

/// What one query measures: the object, its sub-objects and the collection period.
#[derive(Debug, Clone, Copy)]
pub struct PmTarget<'a> {
    /// The measured object (a VNF instance id).
    pub object_instance_id: &'a str,
    /// Sub-objects to measure (VNFC or connection point instance ids); all when empty.
    pub sub_object_instance_ids: &'a [String],
    /// The collection period.
    pub collection_period: Duration,
}

/// The PromQL of every (metric, object type) pair the VNFM can measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmCatalogue {
    templates: BTreeMap<(PmMetric, PmObjectType), String>,
}

const PLACEHOLDERS: [&str; 3] = [
    "object_instance_id",
    "sub_object_instance_ids",
    "collection_period",
];

impl Default for PmCatalogue {
    /// The default PromQL, reading the exporters' metrics named in the crate documentation.
    fn default() -> Self {
        use PmMetric::*;
        use PmObjectType::*;
        let mut templates = BTreeMap::new();
        let usage = [
            (VCpuUsageMeanVnf, "vnfc_cpu_usage", true),
            (VCpuUsagePeakVnf, "vnfc_cpu_usage", false),
            (VMemoryUsageMeanVnf, "vnfc_memory_usage", true),
            (VMemoryUsagePeakVnf, "vnfc_memory_usage", false),
            (VDiskUsageMeanVnf, "vnfc_disk_usage", true),
            (VDiskUsagePeakVnf, "vnfc_disk_usage", false),
        ];
        for (metric, gauge, mean) in usage {
            let (agg, over) = if mean {
                ("avg", "avg_over_time")
            } else {
                ("max", "max_over_time")
            };
            templates.insert(
                (metric, Vnf),
                format!(
                    "{agg}({over}({gauge}{{vnf_instance_id=\"${{object_instance_id}}\"}}[${{collection_period}}]))"
                ),
            );
            templates.insert(
                (metric, Vnfc),
                format!(
                    "{agg} by (vnfc_instance_id) ({over}({gauge}{{vnf_instance_id=\"${{object_instance_id}}\",vnfc_instance_id=~\"${{sub_object_instance_ids}}\"}}[${{collection_period}}]))"
                ),
            );
        }
        let traffic = [
            (ByteIncomingVnfIntCp, "received_bytes", VnfIntCp),
            (ByteOutgoingVnfIntCp, "sent_bytes", VnfIntCp),
            (PacketIncomingVnfIntCp, "received_packets", VnfIntCp),
            (PacketOutgoingVnfIntCp, "sent_packets", VnfIntCp),
            (ByteIncomingVnfExtCp, "received_bytes", VnfExtCp),
            (ByteOutgoingVnfExtCp, "sent_bytes", VnfExtCp),
            (PacketIncomingVnfExtCp, "received_packets", VnfExtCp),
            (PacketOutgoingVnfExtCp, "sent_packets", VnfExtCp),
        ];
        for (metric, counter, object_type) in traffic {
            let kind = if object_type == VnfIntCp {
                "int"
            } else {
                "ext"
            };
            templates.insert(
                (metric, object_type),
                format!(
                    "sum by (cp_instance_id) (increase(vnf_cp_{counter}_total{{vnf_instance_id=\"${{object_instance_id}}\",cp_kind=\"{kind}\",cp_instance_id=~\"${{sub_object_instance_ids}}\"}}[${{collection_period}}]))"
                ),
            );
        }
        PmCatalogue { templates }
    }
}

impl PmCatalogue {
    /// The defaults with `overrides` applied. Fails on an unknown metric or object type, an
    /// empty template, or a placeholder other than the three known ones.
    pub fn with_overrides(overrides: &PromqlOverrides) -> Result<PmCatalogue, Error> {
        let mut catalogue = PmCatalogue::default();
        for (metric, per_type) in overrides {
            let metric: PmMetric = metric.parse()?;
            for (object_type, template) in per_type {
                let object_type: PmObjectType =
                    object_type.parse().map_err(|_| Error::UnknownObjectType {
                        name: object_type.clone(),
                    })?;
                let bad = |reason: String| Error::BadTemplate {
                    metric: metric.to_string(),
                    object_type: object_type.to_string(),
                    reason,
                };
                if template.trim().is_empty() {
                    return Err(bad("is empty".into()));
                }
                for piece in placeholders(template) {
                    let name =
                        piece.map_err(|at| bad(format!("has an unclosed `${{` at byte {at}")))?;
                    if !PLACEHOLDERS.contains(&name) {
                        return Err(bad(format!(
                            "uses the unknown placeholder `${{{name}}}` (known: {})",
                            PLACEHOLDERS.map(|p| format!("${{{p}}}")).join(", ")
                        )));
                    }
                }
                catalogue
                    .templates
                    .insert((metric, object_type), template.trim().to_string());
            }
        }
        Ok(catalogue)
    }

    /// The template of `metric` on `object_type`.
    pub fn template(&self, metric: PmMetric, object_type: PmObjectType) -> Result<&str, Error> {
        self.templates
            .get(&(metric, object_type))
            .map(String::as_str)
            .ok_or_else(|| Error::UnsupportedObjectType {
                metric: metric.to_string(),
                object_type: object_type.to_string(),
                supported: self
                    .object_types(metric)
                    .map(|t| t.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }

    /// The object types `metric` can be measured on.
    pub fn object_types(&self, metric: PmMetric) -> impl Iterator<Item = PmObjectType> + '_ {
        self.templates
            .keys()
            .filter(move |(m, _)| *m == metric)
            .map(|(_, t)| *t)
    }

    /// Every (metric, object type, template), in catalogue order.
    pub fn entries(&self) -> impl Iterator<Item = (PmMetric, PmObjectType, &str)> {
        self.templates
            .iter()
            .map(|((m, t), tpl)| (*m, *t, tpl.as_str()))
    }

    /// The PromQL measuring `metric` (a name, see [`PmMetric`]'s `FromStr`) on
    /// `object_type` for `target`.
    pub fn promql(
        &self,
        metric: &str,
        object_type: PmObjectType,
        target: &PmTarget<'_>,
    ) -> Result<String, Error> {
        let metric: PmMetric = metric.parse()?;
        let template = self.template(metric, object_type)?;
        let period =
            promql_duration(target.collection_period).ok_or_else(|| Error::BadTemplate {
                metric: metric.to_string(),
                object_type: object_type.to_string(),
                reason: "cannot be used with a collection period shorter than 1 ms".into(),
            })?;
        let subs = if target.sub_object_instance_ids.is_empty() {
            ".+".to_string()
        } else {
            let alternatives: Vec<String> = target
                .sub_object_instance_ids
                .iter()
                .map(|id| regex_escape(id))
                .collect();
            string_escape(&alternatives.join("|"))
        };
        let mut out = String::with_capacity(template.len() + 64);
        let mut rest = template;
        while let Some(start) = rest.find("${") {
            out.push_str(&rest[..start]);
            let after = &rest[start + 2..];
            let end = after.find('}').expect("templates are checked when loaded");
            match &after[..end] {
                "object_instance_id" => out.push_str(&string_escape(target.object_instance_id)),
                "sub_object_instance_ids" => out.push_str(&subs),
                "collection_period" => out.push_str(&period),
                other => unreachable!("placeholder {other} was checked when loaded"),
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    /// The catalogue as a Markdown table (metric, object type, PromQL), as in the docs.
    pub fn markdown_table(&self) -> String {
        let mut s = String::from("| metric | object type | PromQL |\n|---|---|---|\n");
        for (m, t, tpl) in self.entries() {
            s.push_str(&format!(
                "| `{m}` | {t} | `{}` |\n",
                tpl.replace('|', "\\|")
            ));
        }
        s
    }
}

/// The names of the `${...}` placeholders of a template; `Err(byte offset)` for an unclosed
/// one.
fn placeholders(template: &str) -> impl Iterator<Item = Result<&str, usize>> {
    let mut offset = 0;
    std::iter::from_fn(move || {
        let rest = &template[offset..];
        let start = rest.find("${")?;
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) => {
                offset += start + 2 + end + 1;
                Some(Ok(&after[..end]))
            }
            None => {
                let at = offset + start;
                offset = template.len();
                Some(Err(at))
            }
        }
    })
}

/// A duration as PromQL writes it: whole seconds (`300s`), else milliseconds.
fn promql_duration(d: Duration) -> Option<String> {
    if d.as_millis() == 0 {
        None
    } else if d.subsec_millis() == 0 {
        Some(format!("{}s", d.as_secs()))
    } else {
        Some(format!("{}ms", d.as_millis()))
    }
}

/// A VNF indicator's PromQL with every `${vnf_instance_id}` replaced by `id`, escaped for a
/// double-quoted PromQL string (the expression writes the quotes).
pub(crate) fn with_instance(expression: &str, id: &str) -> String {
    expression.replace("${vnf_instance_id}", &string_escape(id))
}

/// `s` inside a double-quoted PromQL string.
fn string_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out
}

/// A regular expression (RE2, Prometheus' dialect) matching exactly `s`.
fn regex_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if r"\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target<'a>(subs: &'a [String]) -> PmTarget<'a> {
        PmTarget {
            object_instance_id: "vnf-1",
            sub_object_instance_ids: subs,
            collection_period: Duration::from_secs(60),
        }
    }

    #[test]
    fn every_metric_has_a_default_for_its_object_types() {
        let c = PmCatalogue::default();
        for &m in PmMetric::ALL {
            let types: Vec<_> = c.object_types(m).collect();
            let expected: &[PmObjectType] = match m.as_str() {
                n if n.ends_with("IntCp") => &[PmObjectType::VnfIntCp],
                n if n.ends_with("ExtCp") => &[PmObjectType::VnfExtCp],
                _ => &[PmObjectType::Vnf, PmObjectType::Vnfc],
            };
            assert_eq!(types, expected, "{m}");
        }
        assert_eq!(c.entries().count(), 20);
    }

    #[test]
    fn templates_are_filled_in() {
        let c = PmCatalogue::default();
        assert_eq!(
            c.promql("VCpuUsageMeanVnf", PmObjectType::Vnf, &target(&[]))
                .unwrap(),
            r#"avg(avg_over_time(vnfc_cpu_usage{vnf_instance_id="vnf-1"}[60s]))"#
        );
        assert_eq!(
            c.promql(
                "VMemoryUsagePeakVnf.vnf-1",
                PmObjectType::Vnfc,
                &target(&[])
            )
            .unwrap(),
            r#"max by (vnfc_instance_id) (max_over_time(vnfc_memory_usage{vnf_instance_id="vnf-1",vnfc_instance_id=~".+"}[60s]))"#
        );
        let subs = ["cp.1".to_string(), "cp(2)".to_string()];
        assert_eq!(
            c.promql(
                "ByteIncomingVnfExtCp",
                PmObjectType::VnfExtCp,
                &target(&subs)
            )
            .unwrap(),
            r#"sum by (cp_instance_id) (increase(vnf_cp_received_bytes_total{vnf_instance_id="vnf-1",cp_kind="ext",cp_instance_id=~"cp\\.1|cp\\(2\\)"}[60s]))"#
        );
    }

    #[test]
    fn ids_cannot_break_out_of_the_string() {
        let c = PmCatalogue::default();
        let t = PmTarget {
            object_instance_id: r#"x"} or vector(1) #\"#,
            sub_object_instance_ids: &[],
            collection_period: Duration::from_millis(1500),
        };
        let q = c.promql("VCpuUsageMeanVnf", PmObjectType::Vnf, &t).unwrap();
        assert_eq!(
            q,
            r#"avg(avg_over_time(vnfc_cpu_usage{vnf_instance_id="x\"} or vector(1) #\\"}[1500ms]))"#
        );
    }

    #[test]
    fn unknown_metric_lists_the_known_ones() {
        let e = PmCatalogue::default()
            .promql("CpuMean", PmObjectType::Vnf, &target(&[]))
            .unwrap_err();
        let shown = e.to_string();
        for &m in PmMetric::ALL {
            assert!(shown.contains(m.as_str()), "{shown}");
        }
        assert!(shown.contains("\"CpuMean\""), "{shown}");
    }

    #[test]
    fn wrong_object_type_names_the_supported_ones() {
        let e = PmCatalogue::default()
            .promql("ByteIncomingVnfIntCp", PmObjectType::Vnf, &target(&[]))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "metric ByteIncomingVnfIntCp is not measured on object type Vnf (it is on: VnfIntCp)"
        );
    }

    #[test]
    fn zero_collection_period_is_refused() {
        let t = PmTarget {
            collection_period: Duration::ZERO,
            ..target(&[])
        };
        assert!(
            PmCatalogue::default()
                .promql("VCpuUsageMeanVnf", PmObjectType::Vnf, &t)
                .is_err()
        );
    }

    #[test]
    fn overrides_from_yaml_replace_and_add() {
        let overrides: PromqlOverrides = serde_saphyr::from_str(
            r#"
VCpuUsageMeanVnf:
  Vnf: 'avg(rate(libvirt_cpu_seconds_total{vnf="${object_instance_id}"}[${collection_period}])) * 100'
ByteIncomingVnfIntCp:
  Vnf: 'sum(increase(vnf_cp_received_bytes_total{vnf_instance_id="${object_instance_id}"}[${collection_period}]))'
"#,
        )
        .unwrap();
        let c = PmCatalogue::with_overrides(&overrides).unwrap();
        assert_eq!(
            c.promql("VCpuUsageMeanVnf", PmObjectType::Vnf, &target(&[]))
                .unwrap(),
            r#"avg(rate(libvirt_cpu_seconds_total{vnf="vnf-1"}[60s])) * 100"#
        );
        assert!(
            c.promql("ByteIncomingVnfIntCp", PmObjectType::Vnf, &target(&[]))
                .is_ok()
        );
        // The other defaults stay.
        assert_eq!(
            c.template(PmMetric::VCpuUsageMeanVnf, PmObjectType::Vnfc)
                .unwrap(),
            PmCatalogue::default()
                .template(PmMetric::VCpuUsageMeanVnf, PmObjectType::Vnfc)
                .unwrap()
        );
    }

    #[test]
    fn bad_overrides_are_refused_with_reasons() {
        let one = |m: &str, t: &str, tpl: &str| -> Error {
            let mut o = PromqlOverrides::new();
            o.entry(m.into()).or_default().insert(t.into(), tpl.into());
            PmCatalogue::with_overrides(&o).unwrap_err()
        };
        assert!(matches!(
            one("Nope", "Vnf", "up"),
            Error::UnknownMetric { .. }
        ));
        assert!(matches!(
            one("VCpuUsageMeanVnf", "Pod", "up"),
            Error::UnknownObjectType { .. }
        ));
        let e = one("VCpuUsageMeanVnf", "Vnf", "up{a=\"${vnf_id}\"}").to_string();
        assert!(
            e.contains("${vnf_id}") && e.contains("${object_instance_id}"),
            "{e}"
        );
        let e = one(
            "VCpuUsageMeanVnf",
            "VnfIntCP",
            "up{a=\"${object_instance_id\"}",
        )
        .to_string();
        assert!(
            e.contains("unclosed") || e.contains("unknown placeholder"),
            "{e}"
        );
        let e = one("VCpuUsageMeanVnf", "Vnf", "up ${object_instance_id").to_string();
        assert!(e.contains("unclosed `${` at byte 3"), "{e}");
        assert!(
            one("VCpuUsageMeanVnf", "Vnf", "  ")
                .to_string()
                .contains("is empty")
        );
    }

    #[test]
    fn object_types_parse_in_both_spellings() {
        assert_eq!(
            "VnfIntCP".parse::<PmObjectType>().unwrap(),
            PmObjectType::VnfIntCp
        );
        assert_eq!(
            "VnfExtCp".parse::<PmObjectType>().unwrap(),
            PmObjectType::VnfExtCp
        );
    }

    #[test]
    fn the_documented_table_is_the_catalogue() {
        let table = PmCatalogue::default().markdown_table();
        let crate_doc = include_str!("../promql-defaults.md");
        assert!(
            crate_doc.contains(&table),
            "promql-defaults.md is out of date; it should contain:\n{table}"
        );
        let guide = include_str!("../../../docs/fault-and-performance.md");
        assert!(
            guide.contains(&table),
            "docs/fault-and-performance.md is out of date; it should contain:\n{table}"
        );
    }
}
