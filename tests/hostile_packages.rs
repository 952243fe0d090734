//! Hostile packages: every trick an archive can play on an extractor must be refused with a
//! specific code, and opening or reading a package must never create a file anywhere.
//!
//! The inputs are built in a temporary directory at test time with the zip writer (and a
//! few byte patches for what the writer refuses to produce). The signed package lives in
//! `tests/data/hostile/signed` (its certificates are valid for a century; see
//! `tests/data/hostile/README.md`).

use std::fs;
use std::io::{Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use vnfm::csar::{CsarError, Limits, Package, VerifyOptions};
use vnfm::descriptor::diag::Diagnostic;
use zip::write::SimpleFileOptions;

const META: &[u8] = b"TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: tests\nEntry-Definitions: Definitions/top.yaml\n";
const TOP: &[u8] = b"tosca_definitions_version: tosca_simple_yaml_1_3\n";

/// An outer directory holding only `work/`: anything a package managed to write next to
/// or above its own location would show up in `outer`.
struct Sandbox {
    outer: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        let outer = tempfile::tempdir().unwrap();
        fs::create_dir(outer.path().join("work")).unwrap();
        Sandbox { outer }
    }

    fn work(&self) -> PathBuf {
        self.outer.path().join("work")
    }

    /// Writes `bytes` as `work/<name>` and returns its path.
    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.work().join(name);
        fs::write(&path, bytes).unwrap();
        path
    }

    /// Asserts the sandbox holds exactly what the test put there.
    fn assert_untouched(&self, expected_in_work: &[&str]) {
        let names = |dir: &Path| {
            let mut v: Vec<String> = fs::read_dir(dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(self.outer.path()), ["work"]);
        let mut expected: Vec<String> = expected_in_work.iter().map(|s| s.to_string()).collect();
        expected.sort();
        assert_eq!(names(&self.work()), expected);
    }
}

fn opts() -> SimpleFileOptions {
    SimpleFileOptions::default()
}

/// A zip with a valid TOSCA.meta and entry definitions, plus `extra` entries.
fn zip_with(extra: &[(&str, &[u8])]) -> Vec<u8> {
    let mut files: Vec<(&str, &[u8])> = vec![
        ("TOSCA-Metadata/TOSCA.meta", META),
        ("Definitions/top.yaml", TOP),
    ];
    files.extend_from_slice(extra);
    zip_files(&files)
}

fn zip_files(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in files {
        zip.start_file(*name, opts()).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// Opens `bytes` both from a file on disk and from memory; both must fail the same way.
fn refused(sandbox: &Sandbox, bytes: &[u8], limits: &Limits) -> CsarError {
    let path = sandbox.file("pkg.zip", bytes);
    let from_file = Package::open_with(&path, limits).expect_err("opening from a file must fail");
    let from_memory =
        Package::from_zip_bytes(bytes.to_vec(), limits).expect_err("opening from memory must fail");
    assert_eq!(
        from_file.code(),
        from_memory.code(),
        "{from_file} / {from_memory}"
    );
    sandbox.assert_untouched(&["pkg.zip"]);
    from_file
}

/// Replaces every occurrence of `from` by `to` (same length) in `bytes`.
fn patch(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let mut found = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            found += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    assert!(found > 0, "pattern not found");
}

fn le32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap())
}

/// Offsets of the central directory headers (`PK\x01\x02`) in `bytes`.
fn central_headers(bytes: &[u8]) -> Vec<usize> {
    (0..bytes.len().saturating_sub(4))
        .filter(|&i| bytes[i..].starts_with(b"PK\x01\x02"))
        .collect()
}

const BOMB_BYTES: u64 = 200 << 20;

/// 200 MiB of zeros in one deflated entry (about 200 KiB), built once.
fn bomb() -> &'static [u8] {
    static BOMB: OnceLock<Vec<u8>> = OnceLock::new();
    BOMB.get_or_init(|| {
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, data) in [
            ("TOSCA-Metadata/TOSCA.meta", META),
            ("Definitions/top.yaml", TOP),
        ] {
            zip.start_file(name, opts()).unwrap();
            zip.write_all(data).unwrap();
        }
        zip.start_file("Files/zeros.img", opts().compression_level(Some(9)))
            .unwrap();
        let chunk = vec![0u8; 1 << 20];
        for _ in 0..(BOMB_BYTES >> 20) {
            zip.write_all(&chunk).unwrap();
        }
        zip.finish().unwrap().into_inner()
    })
}

#[test]
fn zip_slip_entries_are_refused() {
    for name in ["../evil", "Definitions/../../evil", "..\\evil"] {
        let sandbox = Sandbox::new();
        let err = refused(&sandbox, &zip_with(&[(name, b"pwned")]), &Limits::default());
        assert_eq!(err.code(), "csar.path-traversal", "{name}: {err}");
        assert!(!sandbox.outer.path().join("evil").exists());
    }
}

#[test]
fn absolute_entry_names_are_refused() {
    let sandbox = Sandbox::new();
    let target = sandbox.outer.path().join("abs-evil");
    let absolute = target.to_str().unwrap().to_string();
    for name in [
        absolute.as_str(),
        "C:/Windows/evil.dll",
        "C:\\evil.txt",
        "\\\\server\\share\\evil",
    ] {
        let err = refused(&sandbox, &zip_with(&[(name, b"pwned")]), &Limits::default());
        assert_eq!(err.code(), "csar.absolute-path", "{name}: {err}");
    }
    assert!(!target.exists());
}

#[test]
fn malformed_entry_names_are_refused() {
    let sandbox = Sandbox::new();
    for name in ["Definitions\\top.yaml", "Files/a\u{7}b"] {
        let err = refused(&sandbox, &zip_with(&[(name, b"x")]), &Limits::default());
        assert_eq!(err.code(), "csar.invalid-path", "{name:?}: {err}");
    }
    // The writer will not put a NUL in a name; patch one in.
    let mut bytes = zip_with(&[("Files/aXb", b"x")]);
    patch(&mut bytes, b"Files/aXb", b"Files/a\0b");
    let err = refused(&sandbox, &bytes, &Limits::default());
    assert_eq!(err.code(), "csar.invalid-path", "{err}");
    let limits = Limits {
        max_path_len: 40,
        ..Limits::default()
    };
    let long = format!("Files/{}", "x".repeat(60));
    let err = refused(&sandbox, &zip_with(&[(&long, b"x")]), &limits);
    assert_eq!(err.code(), "csar.path-too-long", "{err}");
}

#[test]
fn a_zip_bomb_is_refused_by_size_limits() {
    let sandbox = Sandbox::new();
    let small = Limits {
        max_entry_uncompressed_bytes: 10 << 20,
        ..Limits::default()
    };
    let err = refused(&sandbox, bomb(), &small);
    assert_eq!(err.code(), "csar.too-large", "{err}");
    assert!(matches!(&err, CsarError::TooLarge { size, .. } if *size == BOMB_BYTES));
    let small_total = Limits {
        max_total_uncompressed_bytes: 100 << 20,
        ..Limits::default()
    };
    let err = refused(&sandbox, bomb(), &small_total);
    assert!(
        matches!(&err, CsarError::TooLarge { path: None, .. }),
        "{err}"
    );
}

#[test]
fn a_zip_bomb_is_refused_by_its_ratio_with_default_limits() {
    let sandbox = Sandbox::new();
    let err = refused(&sandbox, bomb(), &Limits::default());
    assert_eq!(err.code(), "csar.zip-bomb", "{err}");
    let diag = err.to_diagnostic();
    assert_eq!(diag.location.unwrap().file, "Files/zeros.img");
}

#[test]
fn lying_size_headers_gain_nothing_when_reading() {
    // Declare 1 MiB uncompressed for the 200 MiB entry: it passes the header checks, and
    // reading must stop at the declared size instead of inflating everything.
    let mut bytes = bomb().to_vec();
    let header = *central_headers(&bytes)
        .iter()
        .find(|&&h| bytes[h + 46..].starts_with(b"Files/zeros.img"))
        .unwrap();
    let local = le32(&bytes, header + 42) as usize;
    assert_eq!(u64::from(le32(&bytes, header + 24)), BOMB_BYTES);
    let lie = (1u32 << 20).to_le_bytes();
    bytes[header + 24..header + 28].copy_from_slice(&lie);
    bytes[local + 22..local + 26].copy_from_slice(&lie);

    let pkg = Package::from_zip_bytes(bytes, &Limits::default()).unwrap();
    let err = pkg.read("Files/zeros.img").unwrap_err();
    assert_eq!(err.code(), "csar.corrupt-entry", "{err}");
    let err = pkg.sha256_hex("Files/zeros.img").unwrap_err();
    assert_eq!(err.code(), "csar.corrupt-entry", "{err}");
    // Honest entries of the same archive still read fine.
    assert_eq!(pkg.read("Definitions/top.yaml").unwrap(), TOP);
}

#[test]
fn too_many_entries_are_refused() {
    let sandbox = Sandbox::new();
    let names: Vec<String> = (0..120).map(|i| format!("Files/f{i}.txt")).collect();
    let extra: Vec<(&str, &[u8])> = names.iter().map(|n| (n.as_str(), &b"x"[..])).collect();
    let limits = Limits {
        max_entries: 100,
        ..Limits::default()
    };
    let err = refused(&sandbox, &zip_with(&extra), &limits);
    assert_eq!(err.code(), "csar.too-many-entries", "{err}");
    assert!(
        matches!(
            err,
            CsarError::TooManyEntries {
                count: 122,
                max: 100
            }
        ),
        "{err}"
    );
    // The same limit holds for directory packages.
    let dir = sandbox.work().join("unpacked");
    fs::create_dir_all(dir.join("Files")).unwrap();
    for n in &names {
        fs::write(dir.join(n), b"x").unwrap();
    }
    let err = Package::open_with(&dir, &limits).unwrap_err();
    assert_eq!(err.code(), "csar.too-many-entries", "{err}");
}

#[test]
fn symlink_entries_are_refused() {
    let sandbox = Sandbox::new();
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, data) in [
        ("TOSCA-Metadata/TOSCA.meta", META),
        ("Definitions/top.yaml", TOP),
    ] {
        zip.start_file(name, opts()).unwrap();
        zip.write_all(data).unwrap();
    }
    zip.add_symlink("Files/passwd", "/etc/passwd", opts())
        .unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    let err = refused(&sandbox, &bytes, &Limits::default());
    assert_eq!(err.code(), "csar.symlink", "{err}");
}

#[cfg(unix)]
#[test]
fn directory_symlinks_must_stay_inside_the_package() {
    use std::os::unix::fs::symlink;

    let sandbox = Sandbox::new();
    let dir = sandbox.work().join("pkg");
    fs::create_dir_all(dir.join("TOSCA-Metadata")).unwrap();
    fs::create_dir_all(dir.join("Definitions")).unwrap();
    fs::write(dir.join("TOSCA-Metadata/TOSCA.meta"), META).unwrap();
    fs::write(dir.join("Definitions/top.yaml"), TOP).unwrap();
    // A link to a file inside the package is a file of the package.
    symlink("top.yaml", dir.join("Definitions/alias.yaml")).unwrap();
    let pkg = Package::open(&dir).unwrap();
    assert_eq!(pkg.read("Definitions/alias.yaml").unwrap(), TOP);

    let secret = sandbox.outer.path().join("secret.txt");
    fs::write(&secret, b"outside").unwrap();
    symlink(&secret, dir.join("Definitions/secret.yaml")).unwrap();
    let err = Package::open(&dir).unwrap_err();
    assert_eq!(err.code(), "csar.symlink", "{err}");
    fs::remove_file(dir.join("Definitions/secret.yaml")).unwrap();

    symlink("/nonexistent/target", dir.join("Definitions/dangling.yaml")).unwrap();
    let err = Package::open(&dir).unwrap_err();
    assert_eq!(err.code(), "csar.symlink", "{err}");
    fs::remove_file(dir.join("Definitions/dangling.yaml")).unwrap();

    // A link swapped in after opening is caught when the file is read.
    let pkg = Package::open(&dir).unwrap();
    fs::remove_file(dir.join("Definitions/alias.yaml")).unwrap();
    symlink(&secret, dir.join("Definitions/alias.yaml")).unwrap();
    let err = pkg.read("Definitions/alias.yaml").unwrap_err();
    assert_eq!(err.code(), "csar.symlink", "{err}");
    fs::remove_file(dir.join("Definitions/alias.yaml")).unwrap();

    // So is a directory on the way swapped for a link to one outside.
    let decoy = sandbox.outer.path().join("decoy");
    fs::create_dir_all(&decoy).unwrap();
    fs::write(decoy.join("top.yaml"), b"outside").unwrap();
    let pkg = Package::open(&dir).unwrap();
    fs::rename(dir.join("Definitions"), dir.join("Definitions.orig")).unwrap();
    symlink(&decoy, dir.join("Definitions")).unwrap();
    let err = pkg.read("Definitions/top.yaml").unwrap_err();
    assert_eq!(err.code(), "csar.symlink", "{err}");
    fs::remove_file(dir.join("Definitions")).unwrap();
    fs::rename(dir.join("Definitions.orig"), dir.join("Definitions")).unwrap();
    fs::remove_dir_all(&decoy).unwrap();

    // An absolute link that ends inside the package is a file of the package too.
    symlink(
        dir.canonicalize().unwrap().join("Definitions/top.yaml"),
        dir.join("Definitions/absolute.yaml"),
    )
    .unwrap();
    let pkg = Package::open(&dir).unwrap();
    assert_eq!(pkg.read("Definitions/absolute.yaml").unwrap(), TOP);
    fs::remove_file(&secret).unwrap();
    sandbox.assert_untouched(&["pkg"]);
}

#[test]
fn duplicate_entry_names_are_refused() {
    let sandbox = Sandbox::new();
    // The writer refuses exact duplicates; rename the second entry in place.
    let mut bytes = zip_with(&[("Files/aaa.yaml", b"one"), ("Files/bbb.yaml", b"two")]);
    patch(&mut bytes, b"Files/bbb.yaml", b"Files/aaa.yaml");
    let err = refused(&sandbox, &bytes, &Limits::default());
    assert_eq!(err.code(), "csar.duplicate-entry", "{err}");
    // The message says what is wrong and what to do, with no empty name in it.
    let text = err.to_string();
    assert!(
        !text.contains("``") && text.contains("appears more than once") && text.contains("rebuild"),
        "{text}"
    );

    for (a, b) in [
        ("Files/a.yaml", "Files/./a.yaml"),
        ("Files/a.yaml", "Files//a.yaml"),
        ("Files/a.yaml", "Files/x/../a.yaml"),
        ("Files/a", "Files/a/b.yaml"),
    ] {
        let err = refused(
            &sandbox,
            &zip_with(&[(a, b"one"), (b, b"two")]),
            &Limits::default(),
        );
        assert_eq!(err.code(), "csar.duplicate-entry", "{a} / {b}: {err}");
    }

    // Case-only duplicates open, with a warning.
    let pkg = Package::from_zip_bytes(
        zip_with(&[("Files/Readme.txt", b"one"), ("Files/README.txt", b"two")]),
        &Limits::default(),
    )
    .unwrap();
    let warn: Vec<&Diagnostic> = pkg
        .diagnostics()
        .iter()
        .filter(|d| d.code == "csar.case-duplicate")
        .collect();
    assert_eq!(warn.len(), 1);
    assert!(!warn[0].is_error());
}

#[test]
fn overlapping_entries_are_refused() {
    let sandbox = Sandbox::new();
    // Point the second file's central header at the first file's data.
    let mut bytes = zip_with(&[
        ("Files/one.bin", b"payload one"),
        ("Files/two.bin", b"payload two"),
    ]);
    let headers = central_headers(&bytes);
    let find = |name: &[u8]| {
        *headers
            .iter()
            .find(|&&h| bytes[h + 46..].starts_with(name))
            .unwrap()
    };
    let (one, two) = (find(b"Files/one.bin"), find(b"Files/two.bin"));
    let offset = le32(&bytes, one + 42).to_le_bytes();
    bytes[two + 42..two + 46].copy_from_slice(&offset);
    let err = refused(&sandbox, &bytes, &Limits::default());
    assert_eq!(err.code(), "csar.zip-bomb", "{err}");
}

#[test]
fn a_missing_entry_definitions_key_is_reported_at_tosca_meta() {
    let sandbox = Sandbox::new();
    let meta: &[u8] = b"TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: tests\n";
    let bytes = zip_files(&[
        ("TOSCA-Metadata/TOSCA.meta", meta),
        ("Definitions/top.yaml", TOP),
    ]);
    let err = refused(&sandbox, &bytes, &Limits::default());
    assert_eq!(err.code(), "csar.missing-entry-definitions", "{err}");
    assert_eq!(
        err.to_diagnostic().location.unwrap().to_string(),
        "TOSCA-Metadata/TOSCA.meta:1"
    );
}

#[test]
fn entry_definitions_naming_an_absent_or_escaping_file_are_reported() {
    let sandbox = Sandbox::new();
    let bytes = zip_files(&[
        ("TOSCA-Metadata/TOSCA.meta", META),
        ("Definitions/other.yaml", TOP),
    ]);
    let err = refused(&sandbox, &bytes, &Limits::default());
    assert_eq!(err.code(), "csar.entry-definitions-not-found", "{err}");
    assert_eq!(
        err.to_diagnostic().location.unwrap().to_string(),
        "TOSCA-Metadata/TOSCA.meta:4"
    );

    let meta: &[u8] = b"TOSCA-Meta-File-Version: 1.0\nCSAR-Version: 1.1\nCreated-by: tests\nEntry-Definitions: ../../etc/passwd\n";
    let bytes = zip_files(&[
        ("TOSCA-Metadata/TOSCA.meta", meta),
        ("Definitions/top.yaml", TOP),
    ]);
    let err = refused(&sandbox, &bytes, &Limits::default());
    assert_eq!(err.code(), "csar.invalid-entry-definitions", "{err}");
}

#[test]
fn a_wrong_digest_is_reported_with_both_values_and_its_declaration() {
    let declared = "0000000000000000000000000000000000000000000000000000000000000000";
    let manifest = format!(
        "metadata:\n  vnf_product_name: x\n\nSource: Definitions/top.yaml\nAlgorithm: SHA-256\nHash: {declared}\n"
    );
    let meta = format!(
        "{}ETSI-Entry-Manifest: top.mf\n",
        String::from_utf8_lossy(META)
    );
    let bytes = zip_files(&[
        ("TOSCA-Metadata/TOSCA.meta", meta.as_bytes()),
        ("Definitions/top.yaml", TOP),
        ("top.mf", manifest.as_bytes()),
    ]);
    let pkg = Package::from_zip_bytes(bytes, &Limits::default()).unwrap();
    let actual = pkg.sha256_hex("Definitions/top.yaml").unwrap();
    let diags = pkg.verify(&VerifyOptions::default());
    let errors: Vec<&Diagnostic> = diags.iter().filter(|d| d.is_error()).collect();
    assert_eq!(errors.len(), 1, "{diags:#?}");
    let d = errors[0];
    assert_eq!(d.code, "csar.digest-mismatch");
    assert_eq!(d.location.as_ref().unwrap().to_string(), "top.mf:6");
    for part in [
        "Definitions/top.yaml",
        declared,
        actual.as_str(),
        "top.mf:6",
    ] {
        assert!(d.message.contains(part), "`{part}` not in: {}", d.message);
    }
}

/// The committed signed package, zipped in memory, with `tamper` applied to the manifest.
fn signed_fixture(tamper: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hostile/signed");
    let mut files = Vec::new();
    for name in [
        "TOSCA-Metadata/TOSCA.meta",
        "Definitions/top.yaml",
        "Files/signer.cert",
        "signed.mf",
    ] {
        let mut data = fs::read(root.join(name)).unwrap();
        if name == "signed.mf" {
            tamper(&mut data);
        }
        files.push((name, data));
    }
    let refs: Vec<(&str, &[u8])> = files.iter().map(|(n, d)| (*n, d.as_slice())).collect();
    zip_files(&refs)
}

#[test]
fn a_tampered_signed_manifest_is_reported() {
    let roots = vec![
        fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/hostile/signed-ca.pem"))
            .unwrap(),
    ];
    let trusted = VerifyOptions {
        trusted_roots_pem: roots,
        require_signature: true,
    };
    let intact = Package::from_zip_bytes(signed_fixture(|_| {}), &Limits::default()).unwrap();
    assert!(
        intact.verify(&trusted).is_empty(),
        "{:#?}",
        intact.verify(&trusted)
    );
    let untrusted: Vec<_> = intact
        .verify(&VerifyOptions::default())
        .into_iter()
        .map(|d| d.code.to_string())
        .collect();
    assert_eq!(untrusted, ["csar.signature-untrusted"]);

    let tampered = Package::from_zip_bytes(
        signed_fixture(|m| patch(m, b"vnf_package_version: 1.0", b"vnf_package_version: 6.6")),
        &Limits::default(),
    )
    .unwrap();
    for opts in [&trusted, &VerifyOptions::default()] {
        let diags = tampered.verify(opts);
        let codes: Vec<_> = diags.iter().map(|d| d.code.as_ref()).collect();
        assert_eq!(codes, ["csar.bad-signature"], "{diags:#?}");
        assert!(diags[0].is_error());
        assert_eq!(diags[0].location.as_ref().unwrap().file, "signed.mf");
    }
}

#[test]
fn non_zip_input_is_refused() {
    let sandbox = Sandbox::new();
    let err = refused(
        &sandbox,
        b"this is not a zip archive, just some text\n",
        &Limits::default(),
    );
    assert_eq!(err.code(), "csar.not-a-zip", "{err}");
    let err = refused(&sandbox, &[0xFFu8; 4096], &Limits::default());
    assert_eq!(err.code(), "csar.not-a-zip", "{err}");
}

#[test]
fn a_truncated_zip_is_refused() {
    let sandbox = Sandbox::new();
    let whole = zip_with(&[("Files/data.bin", &[7u8; 4096])]);
    for keep in [whole.len() / 2, whole.len() - 10] {
        let err = refused(&sandbox, &whole[..keep], &Limits::default());
        assert_eq!(
            err.code(),
            "csar.truncated-zip",
            "kept {keep} of {}: {err}",
            whole.len()
        );
    }
}

#[test]
fn an_empty_file_is_refused() {
    let sandbox = Sandbox::new();
    let err = refused(&sandbox, b"", &Limits::default());
    assert_eq!(err.code(), "csar.empty-package", "{err}");
    // An empty but well-formed archive has no entry definitions.
    let err = refused(&sandbox, &zip_files(&[]), &Limits::default());
    assert_eq!(err.code(), "csar.no-entry-definitions", "{err}");
}
