//! The integration tests of `vnfm-infra-openstack`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod support;

mod corpus_nfv;
mod mock_api;
mod nova_operate;
mod package_rollback;
mod real_glance;
mod real_heat;
mod real_heat_watch;
mod real_trace;
mod real_user_data;
mod shared_ext_network;
mod standard_user_data;
mod user_data_class;
