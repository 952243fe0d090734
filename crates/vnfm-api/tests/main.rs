//! The integration tests of `vnfm-api`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

/// Prometheus and Alertmanager test services, shared with `vnfm-prometheus`.
#[path = "../../vnfm-prometheus/tests/support/mod.rs"]
mod prom;
mod support;

mod conditional;
mod enhanced_policy;
mod fm;
mod fm_prometheus;
mod hardening;
mod http_layer;
mod idempotency;
mod indicators;
mod keystone;
mod keystone_projects;
mod limits;
mod mgmt_scripts;
mod mtls;
mod notification_projects;
mod oauth;
mod pkgm_notifications;
mod pm;
mod pm_prometheus;
mod preview;
mod prometheus_plugin;
mod route_scopes;
mod router;
mod tacker_vims;
mod tacker_wire;
mod upload;
mod vim_projects;
mod vim_sharing;
