//! The integration tests of `vnfm-infra-kubernetes`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod support;

mod asd_sample;
mod cluster;
mod control_plane;
mod corpus;
mod failures;
mod faults;
mod features;
mod helm;
mod lcm;
mod operations;
mod real_server;
mod real_trace;
mod tacker_namespace;
mod tls_trust;
mod vnf_b_sample;
