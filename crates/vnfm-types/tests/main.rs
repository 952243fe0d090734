//! The integration tests of `vnfm-types`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod common;

mod samples_v1;
mod samples_v2;
mod spelling;
