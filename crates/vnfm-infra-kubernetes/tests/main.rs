//! Integration tests, one program.

mod support;

mod asd_sample;
mod cluster;
mod corpus;
mod failures;
mod features;
mod helm;
mod lcm;
mod operations;
mod real_server;
mod vnf_b_sample;
