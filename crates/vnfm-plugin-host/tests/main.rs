//! The integration tests of `vnfm-plugin-host`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod support;

mod e2e_k8s_cluster;
mod host;
