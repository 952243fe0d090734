use super::*;

/// Package files that count how often each file is read.
struct CountingReads {
    inner: crate::MemFiles,
    reads: Mutex<HashMap<String, usize>>,
}

impl PackageFiles for CountingReads {
    fn entry_definitions(&self) -> &str {
        self.inner.entry_definitions()
    }
    fn read(&self, path: &str) -> std::io::Result<Vec<u8>> {
        *self.reads.lock().unwrap().entry(path.into()).or_default() += 1;
        self.inner.read(path)
    }
    fn contains(&self, path: &str) -> bool {
        self.inner.contains(path)
    }
    fn paths(&self) -> Vec<String> {
        self.inner.paths()
    }
}

/// Each import of a file is read once and their problems come out in import order; a file
/// that cannot be read is reported where it is imported.
#[test]
fn imports_are_read_once_and_report_in_import_order() {
    let top = "tosca_definitions_version: tosca_simple_yaml_1_3\n\
               imports:\n  - a.yaml\n  - b.yaml\n  - c.yaml\n  - d.yaml\n";
    let files = crate::MemFiles::new("Definitions/top.yaml")
        .with("Definitions/top.yaml", top)
        .with("Definitions/a.yaml", "key: [unclosed\n")
        .with("Definitions/b.yaml", b"\xff\xfe not text".to_vec())
        .with("Definitions/c.yaml", "a: 1\na: 2\n")
        .with(
            "Definitions/d.yaml",
            "tosca_definitions_version: tosca_simple_yaml_1_3\n",
        );
    let files = CountingReads {
        inner: files,
        reads: Mutex::default(),
    };
    let mut sink = Sink::default();
    let graph = read(&files, &mut sink).expect("the entry definitions are read");
    let reads = files.reads.lock().unwrap().clone();
    for name in ["a", "b", "c", "d"] {
        let path = format!("Definitions/{name}.yaml");
        assert_eq!(reads.get(&path), Some(&1), "{path} is read once: {reads:?}");
    }
    let errors: Vec<(String, String)> = sink
        .diags
        .iter()
        .filter(|d| d.severity == vnfm_descriptor::Severity::Error)
        .map(|d| {
            let file = d
                .location
                .as_ref()
                .map(|l| l.file.clone())
                .unwrap_or_default();
            (file, d.code.to_string())
        })
        .collect();
    let files_in_order: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
    assert_eq!(
        files_in_order,
        [
            "Definitions/a.yaml",
            "Definitions/b.yaml",
            "Definitions/c.yaml"
        ],
        "{errors:?}"
    );
    assert_eq!(errors[1].1, "tosca.not-utf8");
    assert!(errors[2].1.starts_with("yaml."), "{errors:?}");
    let loaded: Vec<&str> = graph.files.iter().map(|f| f.display.as_str()).collect();
    assert!(
        loaded.ends_with(&[
            "Definitions/top.yaml",
            "Definitions/a.yaml",
            "Definitions/c.yaml",
            "Definitions/d.yaml"
        ]),
        "{loaded:?}"
    );
}

#[test]
fn forge_urls_map_to_versions_and_names() {
    assert_eq!(
        forge_url(
            "https://forge.etsi.org/rep/nfv/SOL001/raw/v2.6.1/etsi_nfv_sol001_common_types.yaml"
        ),
        Some(("2.6.1", "etsi_nfv_sol001_common_types.yaml"))
    );
    assert_eq!(
        forge_url(
            "https://forge.etsi.org/rep/nfv/SOL001/-/raw/v4.2.1/etsi_nfv_sol001_vnfd_types.yaml"
        ),
        Some(("4.2.1", "etsi_nfv_sol001_vnfd_types.yaml"))
    );
    assert_eq!(
        forge_url("https://example.com/SOL001/raw/v2.6.1/x.yaml"),
        None
    );
    assert_eq!(
        forge_url("https://forge.etsi.org/rep/nfv/SOL005/raw/v2.6.1/x.yaml"),
        None
    );
    assert!(bundled("2.6.1", "etsi_nfv_sol001_vnfd_types.yaml").is_some());
    assert!(bundled("2.5.1", "etsi_nfv_sol001_common_types.yaml").is_none());
}

/// One test, so that no other test fills the process-wide cache in between.
#[test]
fn equal_content_is_parsed_once_and_the_cache_is_bounded() {
    let text = "tosca_definitions_version: tosca_simple_yaml_1_3\ndescription: cache test 1\n";
    let a = unit_for(text);
    // A different allocation with the same content.
    let copy = String::from(text);
    let b = unit_for(copy.as_str());
    assert!(Arc::ptr_eq(&a, &b));
    let c =
        unit_for("tosca_definitions_version: tosca_simple_yaml_1_3\ndescription: cache test 2\n");
    assert!(!Arc::ptr_eq(&a, &c));

    let keep = "tosca_definitions_version: tosca_simple_yaml_1_3\ndescription: kept\n";
    let kept = unit_for(keep);
    for i in 0..(CACHE_MAX_ENTRIES * 2) {
        unit_for(&format!("description: filler {i}\n"));
        // Using `keep` now and then moves it to the back of the eviction order.
        if i % 16 == 0 {
            assert!(Arc::ptr_eq(&kept, &unit_for(keep)));
        }
    }
    let c = cache().lock().unwrap_or_else(|e| e.into_inner());
    assert!(c.map.len() <= CACHE_MAX_ENTRIES);
    assert_eq!(c.map.len(), c.order.len());
}

#[test]
fn units_record_imports_and_problems_without_file_names() {
    let u = unit_for(
        "tosca_definitions_version: tosca_simple_yaml_1_2\nimports:\n  - a.yaml\n  - file: b.yaml\n    namespace_prefix: p\n  - named: c.yaml\nbogus: 1\n",
    );
    let files: Vec<(&str, Option<&str>)> = u
        .imports
        .iter()
        .map(|i| (i.file.name.as_str(), i.prefix.as_deref()))
        .collect();
    assert_eq!(
        files,
        [("a.yaml", None), ("b.yaml", Some("p")), ("c.yaml", None)]
    );
    assert_eq!(u.problems.len(), 1);
    assert_eq!(u.problems[0].code, "tosca.unknown-keyword");
    assert_eq!(u.problems[0].pos, Pos { line: 7, column: 1 });
}
