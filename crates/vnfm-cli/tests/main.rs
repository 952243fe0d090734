//! Integration tests, one program.

mod support;

mod cli;
mod client;
mod large_upload;
mod openstack_client;
mod samples;
mod serve;
