//! The integration tests of `vnfm-mgmt-script`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod support;

mod coordinate;
mod scripts;
mod tacker_corpus;
mod trace_context;
mod userdata;
