//! Hostile input never panics the reader: arbitrary bytes, YAML-like text and mutated corpus
//! VNFDs always give either a descriptor or at least one error diagnostic.
//!
//! 256 cases per property by default; set PROPTEST_CASES to run more.

use crate::common;

use proptest::prelude::*;
use vnfm_tosca::{Loaded, MemFiles, load};

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn check(loaded: &Loaded) -> Result<(), TestCaseError> {
    prop_assert!(
        loaded.descriptor.is_some() || loaded.has_errors(),
        "neither a descriptor nor an error: {:#?}",
        loaded.diagnostics
    );
    // A descriptor only comes without errors.
    prop_assert!(loaded.descriptor.is_none() || !loaded.has_errors());
    Ok(())
}

/// A corpus package and the Definitions file to mutate.
fn corpus_target() -> impl Strategy<Value = (MemFiles, String)> {
    let targets = [
        (
            "v2-vm-basic-lcms-max",
            "Definitions/v2_sample1_df_simple.yaml",
        ),
        (
            "v2-vm-basic-lcms-max",
            "Definitions/v2_sample1_top.vnfd.yaml",
        ),
        ("v2-vm-basic-lcms-max", "Definitions/v2_sample1_types.yaml"),
        (
            "mgmt-k8s-cluster-v1",
            "Definitions/sample_kubernetes_df_complex.yaml",
        ),
        (
            "v2-vm-server-notification",
            "Definitions/v2_sample2_types.yaml",
        ),
        (
            "v2-cnf-instantiate-resources",
            "Definitions/sample_cnf_df_simple.yaml",
        ),
    ];
    let loaded: Vec<(MemFiles, String)> = targets
        .iter()
        .map(|(p, f)| (common::tacker_files(p), f.to_string()))
        .collect();
    proptest::sample::select(loaded)
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, byte: u8 },
    Truncate { at: usize },
    DeleteLine { line: usize },
    DuplicateLine { line: usize },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Flip { at, byte }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        any::<usize>().prop_map(|line| Mutation::DeleteLine { line }),
        any::<usize>().prop_map(|line| Mutation::DuplicateLine { line }),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match *m {
        Mutation::Flip { at, byte } => {
            let i = at % bytes.len();
            bytes[i] ^= byte.max(1);
        }
        Mutation::Truncate { at } => bytes.truncate(at % bytes.len()),
        Mutation::DeleteLine { line } | Mutation::DuplicateLine { line } => {
            let mut lines: Vec<Vec<u8>> =
                bytes.split(|b| *b == b'\n').map(<[u8]>::to_vec).collect();
            let i = line % lines.len();
            if matches!(m, Mutation::DeleteLine { .. }) {
                lines.remove(i);
            } else {
                let copy = lines[i].clone();
                lines.insert(i, copy);
            }
            *bytes = lines.join(&b'\n');
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn arbitrary_bytes_as_entry_definitions(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let files = MemFiles::new("Definitions/top.yaml").with("Definitions/top.yaml", bytes);
        check(&load(&files))?;
    }

    #[test]
    fn yaml_like_text_as_entry_definitions(text in "(tosca_definitions_version: tosca_simple_yaml_1_[23]\n)?([a-z_]{1,12}|[-:\\[\\]{}, ]|\n  |\n    |get_input|node_templates|imports|topology_template|type|tosca\\.nodes\\.nfv\\.VNF|properties|substitution_mappings|requirements|derived_from|&a|\\*a|[0-9]+ ?(MB|GiB))*") {
        let files = MemFiles::new("Definitions/top.yaml")
            .with("Definitions/top.yaml", text)
            .with("Definitions/types.yaml", "tosca_definitions_version: tosca_simple_yaml_1_3\n");
        check(&load(&files))?;
    }

    #[vnfm_test_env::needs(corpus)]
    #[test]
    fn mutated_corpus_vnfds((files, target) in corpus_target(), mutations in proptest::collection::vec(mutation(), 1..4)) {
        let mut files = files;
        let mut bytes = files.files[&target].clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        files.files.insert(target, bytes);
        check(&load(&files))?;
    }
}
