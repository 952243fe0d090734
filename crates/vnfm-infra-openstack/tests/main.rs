//! Integration tests, one program.

mod support;

mod corpus_nfv;
mod mock_api;
mod nova_operate;
mod real_heat;
mod real_heat_watch;
mod shared_ext_network;
mod stand_ins;
