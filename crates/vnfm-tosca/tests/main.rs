//! The integration tests of `vnfm-tosca`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod common;

mod asd;
mod corpus;
mod diagnostics;
mod proptest_load;
mod vnfd_snapshots;
