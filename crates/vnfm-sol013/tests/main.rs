//! The integration tests of `vnfm-sol013`, a module each, built as one test program: one link and
//! one binary instead of one per file, which keeps a cold build's disk use and link time down.

mod corpus;
mod proptest;
mod schema;
