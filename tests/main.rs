//! The integration tests of `vnfm`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod e2e_support;

mod e2e_vnf_a_vnf_b;
mod embedded_packages;
mod hostile_packages;
mod mixed_vnf_real_drivers;
