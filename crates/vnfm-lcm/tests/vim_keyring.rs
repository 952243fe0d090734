//! The Fernet keyring: round trips, rotation, key files, and interoperability with Python's
//! `cryptography` (the library Tacker uses).

use std::os::unix::fs::PermissionsExt as _;
use std::process::Command;

use vnfm_lcm::Keyring;

/// A key and a token made once with Python `cryptography` 48.0.0:
/// `k = Fernet.generate_key(); Fernet(k).encrypt(b'{"password":"made-by-python"}')`.
const PY_KEY: &str = "rSO-O6_9ma47xTJ4z5c0Ms_oraxmGS4FK5CzrytS8Os=";
const PY_TOKEN: &str = "gAAAAABrAU8LIWbpoqjnpeLfxNY8GCLj46-Ab4RSu-PgE0oamh0Veb5p1yPQx1KPvwL0o3r8R93OmZj8_AVJWN3eVNWyyy2R_mgc1KhaUATGb7MYVmuykSk=";

/// The Python of the OpenStack client's environment (`scripts/test-env/openstack.sh`), which
/// has the `cryptography` Tacker uses.
fn python_with_cryptography() -> std::path::PathBuf {
    let cli = std::env::var("VNFM_TEST_OPENSTACK_CLI").expect("VNFM_TEST_OPENSTACK_CLI");
    std::path::Path::new(&cli).with_file_name("python")
}

#[test]
fn round_trip_and_tokens_are_fresh() {
    let ring = Keyring::from_keys([Keyring::generate_key()]).unwrap();
    let a = ring.encrypt(b"hunter2");
    let b = ring.encrypt(b"hunter2");
    assert_ne!(a, b, "every token has its own IV");
    assert!(!String::from_utf8_lossy(&a).contains("hunter2"));
    assert_eq!(ring.decrypt(&a, "t").unwrap(), b"hunter2");
    assert_eq!(ring.decrypt(&b, "t").unwrap(), b"hunter2");
}

#[test]
fn rotation_old_blobs_open_and_reencryption_switches_keys() {
    let k1 = Keyring::generate_key();
    let k2 = Keyring::generate_key();
    let old = Keyring::from_key_list(&k1).unwrap();
    let blob = old.encrypt(b"v1-secret");

    let rotated_ring = Keyring::from_key_list(&format!("{k2}, {k1}")).unwrap();
    assert_eq!(rotated_ring.len(), 2);
    assert_eq!(rotated_ring.decrypt(&blob, "t").unwrap(), b"v1-secret");
    assert!(!rotated_ring.is_current(&blob));

    // New blobs use the newest key: the old keyring cannot open them.
    let fresh = rotated_ring.encrypt(b"v2");
    assert!(old.decrypt(&fresh, "t").is_err());

    let moved = rotated_ring.rotate(&blob, "t").unwrap();
    assert!(rotated_ring.is_current(&moved));
    // After rotation the old key can be dropped.
    let only_new = Keyring::from_key_list(&k2).unwrap();
    assert_eq!(only_new.decrypt(&moved, "t").unwrap(), b"v1-secret");
    assert!(only_new.decrypt(&blob, "t").is_err());
}

#[test]
fn decryption_failure_names_what_and_leaks_nothing() {
    let k1 = Keyring::generate_key();
    let ring = Keyring::from_key_list(&k1).unwrap();
    let other = Keyring::from_keys([Keyring::generate_key()]).unwrap();
    let blob = other.encrypt(b"plaintext-value");
    let err = ring.decrypt(&blob, "the secrets of VIM v1").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("cannot decrypt the secrets of VIM v1: none of the 1 configured"),
        "{msg}"
    );
    assert!(
        !msg.contains(&k1) && !msg.contains("plaintext-value"),
        "{msg}"
    );
    assert!(!format!("{ring:?}").contains(&k1));
}

#[test]
fn fixed_python_token_decrypts() {
    let ring = Keyring::from_keys([Keyring::generate_key().as_str(), PY_KEY]).unwrap();
    assert_eq!(
        ring.decrypt(PY_TOKEN.as_bytes(), "t").unwrap(),
        br#"{"password":"made-by-python"}"#
    );
}

#[vnfm_test_env::needs(openstack_cli)]
#[test]
fn interoperates_with_python_cryptography_both_ways() {
    let python = python_with_cryptography();
    let key = Keyring::generate_key();
    let ring = Keyring::from_key_list(&key).unwrap();

    // Python encrypts, Rust decrypts.
    let out = Command::new(&python)
        .args([
            "-c",
            "import sys; from cryptography.fernet import Fernet; \
             print(Fernet(sys.argv[1].encode()).encrypt(b'from-python').decode())",
            &key,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let token = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        ring.decrypt(token.trim().as_bytes(), "t").unwrap(),
        b"from-python"
    );

    // Rust encrypts, Python (MultiFernet with the key second) decrypts.
    let blob = String::from_utf8(ring.encrypt(b"from-rust")).unwrap();
    let out = Command::new(&python)
        .args([
            "-c",
            "import sys; from cryptography.fernet import Fernet, MultiFernet; \
             m = MultiFernet([Fernet(Fernet.generate_key()), Fernet(sys.argv[1].encode())]); \
             sys.stdout.write(m.decrypt(sys.argv[2].encode()).decode())",
            &key,
            &blob,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"from-rust");
}

#[test]
fn key_file_comments_order_and_permissions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("keys");
    let k1 = Keyring::generate_key();
    let k2 = Keyring::generate_key();
    std::fs::write(
        &path,
        format!("# newest first\n\n{k2}\n  # old one\n{k1}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let ring = Keyring::from_key_file(&path).unwrap();
    assert_eq!(ring.len(), 2);
    // The first key encrypts.
    let blob = ring.encrypt(b"x");
    assert!(
        Keyring::from_key_list(&k2)
            .unwrap()
            .decrypt(&blob, "t")
            .is_ok()
    );
    assert!(
        Keyring::from_key_list(&k1)
            .unwrap()
            .decrypt(&blob, "t")
            .is_err()
    );

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let msg = Keyring::from_key_file(&path).unwrap_err().to_string();
    assert!(
        msg.contains("mode 0640") && msg.contains("chmod 600"),
        "{msg}"
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o604)).unwrap();
    assert!(Keyring::from_key_file(&path).is_err());

    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&path, format!("{k1}\nnot-a-key-value\n")).unwrap();
    let msg = Keyring::from_key_file(&path).unwrap_err().to_string();
    assert!(
        msg.contains("line 2") && !msg.contains("not-a-key-value"),
        "{msg}"
    );
    assert!(!msg.contains(&k1), "{msg}");

    std::fs::write(&path, "# only comments\n").unwrap();
    let msg = Keyring::from_key_file(&path).unwrap_err().to_string();
    assert!(msg.contains("holds no key"), "{msg}");

    let msg = Keyring::from_key_file(dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.starts_with("encryption keys: cannot read key file"),
        "{msg}"
    );
}

#[test]
fn generated_key_file_is_private_loadable_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fernet.keys");
    let ring = Keyring::generate_key_file(&path).unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let again = Keyring::from_key_file(&path).unwrap();
    assert_eq!(again.decrypt(&ring.encrypt(b"x"), "t").unwrap(), b"x");
    let before = std::fs::read(&path).unwrap();
    assert!(Keyring::generate_key_file(&path).is_err());
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn env_variable_that_is_missing_is_a_clear_error() {
    let msg = Keyring::from_env("VNFM_TEST_NO_SUCH_VARIABLE_4711")
        .unwrap_err()
        .to_string();
    assert_eq!(
        msg,
        "encryption keys: environment variable VNFM_TEST_NO_SUCH_VARIABLE_4711 is not set"
    );
}
