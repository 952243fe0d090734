//! TOSCA 1.2/1.3 with the ETSI SOL001 profile (and the ONAP/O-RAN ASD), read into the
//! normalized descriptor model.

pub mod yaml;
