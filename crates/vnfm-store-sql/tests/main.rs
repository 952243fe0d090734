//! The integration tests of `vnfm-store-sql`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod common;

mod alarms;
mod group_commit;
mod indicators;
mod pm;
mod projects;
mod store;
