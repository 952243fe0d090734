//! The REST API's integration tests, one program: each module was its own test binary.

mod support;

mod fm;
mod fm_prometheus;
mod hardening;
mod indicators;
mod keystone;
mod keystone_projects;
mod limits;
mod mgmt_scripts;
mod pkgm_notifications;
mod pm;
mod pm_prometheus;
mod preview;
mod router;
mod tacker_vims;
mod upload;
