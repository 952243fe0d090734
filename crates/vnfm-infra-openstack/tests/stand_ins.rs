//! The stand-in Heat environment checked in under `scripts/test-env/heat-stand-ins/` (for
//! `vnfm serve --heat-environment` on a test cloud) is the one `StandIns` builds with loopback
//! port addresses. Regenerate with `UPDATE_STAND_INS=1 cargo test -p vnfm-infra-openstack
//! --test integration stand_ins::`.

use std::path::Path;

use vnfm_infra_openstack::testing::{PortAddresses, StandIns};

#[test]
fn checked_in_stand_ins_match_the_generated_ones() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/test-env/heat-stand-ins");
    let (environment, files) = StandIns::default()
        .port_addresses(PortAddresses::Loopback)
        .environment();
    let mut wanted = vec![(
        "environment.yaml".to_string(),
        serde_json::to_string_pretty(&environment).unwrap() + "\n",
    )];
    for (name, body) in &files {
        let value: serde_json::Value = serde_json::from_str(body).unwrap();
        wanted.push((
            name.clone(),
            serde_json::to_string_pretty(&value).unwrap() + "\n",
        ));
    }
    if std::env::var_os("UPDATE_STAND_INS").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, body) in &wanted {
            std::fs::write(dir.join(name), body).unwrap();
        }
    }
    for (name, body) in &wanted {
        let have = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert_eq!(
            &have, body,
            "{name} differs from StandIns: regenerate with UPDATE_STAND_INS=1"
        );
    }
    let listed = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(listed, wanted.len(), "stale files in {}", dir.display());
}
