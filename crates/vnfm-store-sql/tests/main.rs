//! Integration tests, one program.

mod common;

mod alarms;
mod group_commit;
mod indicators;
mod pm;
mod projects;
mod store;
