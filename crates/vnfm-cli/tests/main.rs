//! The integration tests of `vnfm-cli`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod support;

mod cli;
mod client;
mod large_upload;
mod openstack_client;
mod samples;
mod serve;
mod tacker_cnf;
mod tacker_flows;
mod tacker_package;
mod tacker_vm;
