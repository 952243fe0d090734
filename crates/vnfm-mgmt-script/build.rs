//! Finds Tacker's sample packages for the tests (`VNFM_TACKER_CORPUS`, the cfg
//! `vnfm_tacker_corpus`): the tests that run their scripts are ignored, with the reason,
//! without them.
fn main() {
    vnfm_test_env::tacker_corpus_build_script();
}
