use super::*;

#[test]
fn severities_are_read_in_any_case_and_cleared_is_refused() {
    assert_eq!(
        parse_severity("minor"),
        Ok(vnfm_types::PerceivedSeverity::Minor)
    );
    assert_eq!(
        parse_severity("CRITICAL"),
        Ok(vnfm_types::PerceivedSeverity::Critical)
    );
    for bad in ["cleared", "urgent", ""] {
        let e = parse_severity(bad).unwrap_err();
        assert!(e.contains("CRITICAL, MAJOR, MINOR"), "{e}");
    }
}

/// `vnfm serve`'s arguments as the command line gives them.
fn serve_args(line: &[&str]) -> Result<ServeArgs, clap::Error> {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }
    let argv = std::iter::once("vnfm-serve").chain(line.iter().copied());
    <Cli as clap::Parser>::try_parse_from(argv).map(|c| c.serve)
}

#[test]
fn the_infrastructure_watch_runs_every_30_s_unless_told_otherwise_and_0_turns_it_off() {
    let every = |line: &[&str]| {
        infra_watch(serve_args(line).unwrap().infra_watch_interval).map(|w| w.every)
    };
    assert_eq!(every(&[]), Some(Duration::from_secs(30)));
    assert_eq!(
        every(&["--infra-watch-interval", "5"]),
        Some(Duration::from_secs(5))
    );
    assert_eq!(every(&["--infra-watch-interval", "0"]), None);
    let default_timeout = vnfm::lcm::InfraWatchOptions::default().timeout;
    assert_eq!(infra_watch(5).map(|w| w.timeout), Some(default_timeout));
    for bad in ["-1", "soon", "1.5", ""] {
        let e = serve_args(&[&format!("--infra-watch-interval={bad}")]).unwrap_err();
        assert!(
            e.to_string().contains("--infra-watch-interval"),
            "{bad}: {e}"
        );
    }
}

#[test]
fn stacks_are_polled_at_most_2_s_apart_unless_told_otherwise() {
    let poll = |line: &[&str]| openstack_config(&serve_args(line).unwrap()).unwrap().poll;
    let default = poll(&[]);
    assert_eq!(default.initial, Duration::from_secs(1));
    assert_eq!(default.max, Duration::from_secs(2));
    assert_eq!(
        poll(&["--openstack-poll-max", "5"]).max,
        Duration::from_secs(5)
    );
    for bad in ["0", "61", "1.5"] {
        let e = serve_args(&[&format!("--openstack-poll-max={bad}")]).unwrap_err();
        assert!(e.to_string().contains("--openstack-poll-max"), "{bad}: {e}");
    }
}

#[test]
fn leases_last_6_s_renewed_every_2_s_unless_told_otherwise() {
    let leases = |line: &[&str]| leases(&serve_args(line).unwrap());
    assert_eq!(
        leases(&[]).unwrap(),
        (Duration::from_secs(6), Duration::from_secs(2))
    );
    assert_eq!(
        leases(&["--lease-ttl", "30", "--lease-renew-interval", "10"]).unwrap(),
        (Duration::from_secs(30), Duration::from_secs(10))
    );
    let e = leases(&["--lease-ttl", "2"]).unwrap_err();
    assert!(e.to_string().contains("--lease-renew-interval"), "{e}");
    assert!(serve_args(&["--lease-ttl", "0"]).is_err());
}

#[test]
fn client_certificates_need_tls_a_ca_and_a_mode_and_the_map_is_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (cert, key, ca) = (file("c.pem", ""), file("k.pem", ""), file("ca.pem", ""));
    // A mode without a CA or without TLS, a CA or a map without a mode.
    for line in [
        vec!["--tls-client-auth", "required"],
        vec![
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--tls-client-auth",
            "required",
        ],
        vec!["--tls-client-auth", "optional", "--tls-client-ca", &ca],
        vec![
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--tls-client-ca",
            &ca,
        ],
        vec!["--tls-client-map", &ca],
        vec![
            "--tls-cert",
            &cert,
            "--tls-key",
            &key,
            "--tls-client-ca",
            &ca,
            "--tls-client-auth",
            "request",
        ],
    ] {
        assert!(serve_args(&line).is_err(), "{line:?}");
    }
    let map = file(
        "map.json",
        r#"[{"san_uri": "spiffe://nfv/nfvo", "client_id": "nfvo", "roles": ["vnf_operator"]}]"#,
    );
    let base = [
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
        "--tls-client-ca",
        &ca,
        "--tls-client-ca",
        &ca,
        "--tls-client-auth",
        "optional",
        "--tls-client-map",
        &map,
    ];
    let args = serve_args(&base).unwrap();
    assert_eq!(args.tls_client_ca.len(), 2);
    // `vnf_operator` is no role the default mapping knows: refused at start ...
    let e = client_certificate_map(&args).unwrap_err();
    assert!(e.to_string().contains("allow nothing"), "{e}");
    // ... and one with --oauth-writer-roles vnf_operator.
    let mut line = base.to_vec();
    line.extend(["--oauth-writer-roles", "vnf_operator"]);
    let map = client_certificate_map(&serve_args(&line).unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(map.len(), 1);
}

#[test]
fn pm_jobs_keep_100_reports_unless_told_otherwise() {
    let kept = |line: &[&str]| pm_options(&serve_args(line).unwrap()).max_reports;
    assert_eq!(kept(&[]), 100);
    assert_eq!(kept(&["--pm-reports-kept", "7"]), 7);
    let period = pm_options(&serve_args(&["--pm-threshold-period", "15"]).unwrap());
    assert_eq!(period.threshold_period, Duration::from_secs(15));
    for bad in ["0", "-1", "100001", "many"] {
        let e = serve_args(&[&format!("--pm-reports-kept={bad}")]).unwrap_err();
        assert!(e.to_string().contains("--pm-reports-kept"), "{bad}: {e}");
    }
}

#[test]
fn promql_files_and_prometheus_urls_are_checked_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.yaml");
    std::fs::write(
        &good,
        "VCpuUsageMeanVnf:\n  Vnf: 'avg(cpu{vnf=\"${object_instance_id}\"})'\n",
    )
    .unwrap();
    assert!(prometheus(vnfm::lcm::builder(), "http://127.0.0.1:9090", Some(&good)).is_ok());
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "VCpuUsageMeanVnf: [1, 2]\n").unwrap();
    let e = prometheus(vnfm::lcm::builder(), "http://127.0.0.1:9090", Some(&bad)).unwrap_err();
    assert!(matches!(e, ServeError::PromqlFile { .. }), "{e}");
    let unknown = dir.path().join("unknown.yaml");
    std::fs::write(&unknown, "CpuLoad:\n  Vnf: 'up'\n").unwrap();
    let e = prometheus(
        vnfm::lcm::builder(),
        "http://127.0.0.1:9090",
        Some(&unknown),
    )
    .unwrap_err();
    assert!(matches!(e, ServeError::Prometheus { .. }), "{e}");
    assert!(e.to_string().contains("CpuLoad"), "{e}");
    let e = prometheus(vnfm::lcm::builder(), "not a url", None).unwrap_err();
    assert!(e.to_string().contains("--prometheus-url not a url"), "{e}");
}

#[test]
fn outgoing_tokens_from_the_issuer_need_its_client_and_take_the_place_of_the_nfvo_secret() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret");
    std::fs::write(&secret, "s3cret-of-vnfm\n").unwrap();
    let secret = secret.to_str().unwrap();
    let issuer = [
        "--oauth-issuer",
        "http://127.0.0.1:8080/realms/nfv",
        "--oauth-audience",
        "vnfm",
    ];
    let client = [
        "--oauth-client-id",
        "vnfm",
        "--oauth-client-secret-file",
        secret,
    ];
    // Without the flags: no outgoing tokens.
    let line: Vec<&str> = issuer.iter().chain(&client).copied().collect();
    assert!(
        outbound_oauth(&serve_args(&line).unwrap())
            .unwrap()
            .is_none()
    );
    // Without the issuer's client, or beside the NFVO's own credentials: refused.
    let mut no_client = issuer.to_vec();
    no_client.push("--nfvo-oauth-from-issuer");
    assert!(serve_args(&no_client).is_err());
    let mut both = line.clone();
    both.extend([
        "--nfvo-url",
        "https://nfvo.example",
        "--nfvo-client-id",
        "vnfm",
        "--nfvo-oauth-from-issuer",
    ]);
    assert!(serve_args(&both).is_err());
    let mut full = line.clone();
    full.extend([
        "--nfvo-url",
        "https://nfvo.example",
        "--nfvo-oauth-from-issuer",
        "--notify-oauth-from-issuer",
        "https://nfvo.example/notify, https://oss.example:8443/",
        "--oauth-outbound-scope",
        "nfvo",
    ]);
    let o = outbound_oauth(&serve_args(&full).unwrap())
        .unwrap()
        .unwrap();
    assert!(o.nfvo);
    assert_eq!(
        o.callbacks,
        ["https://nfvo.example/notify", "https://oss.example:8443/"]
    );
    assert_eq!(o.tokens.client_id(), "vnfm");
    assert_eq!(o.tokens.method(), "client_secret_basic");
    assert!(!format!("{o:?}").contains("s3cret-of-vnfm"));
    // Notifications only, by private_key_jwt: a key file that is no key fails at start.
    let mut pk = issuer.to_vec();
    pk.extend([
        "--oauth-client-id",
        "vnfm-pkjwt",
        "--oauth-client-auth",
        "private_key_jwt",
        "--oauth-client-key-file",
        secret,
        "--notify-oauth-from-issuer",
        "https://nfvo.example/",
    ]);
    let e = outbound_oauth(&serve_args(&pk).unwrap()).unwrap_err();
    assert!(e.to_string().contains("private_key_jwt"), "{e}");
    assert!(!e.to_string().contains("s3cret"), "{e}");
}

#[test]
fn lists_have_pages_of_100_unless_told_otherwise_for_every_list_or_one() {
    use vnfm_api::listing::Listed;
    let sizes = page_sizes(&serve_args(&[]).unwrap()).unwrap();
    assert_eq!(sizes.of(Listed::VnfInstances), 100);
    let args = serve_args(&[
        "--page-size",
        "20",
        "--page-size-of",
        "vnf_instances=1",
        "--page-size-of",
        "vnf_lcm_op_occs=1",
    ])
    .unwrap();
    let sizes = page_sizes(&args).unwrap();
    assert_eq!(sizes.of(Listed::VnfInstances), 1);
    assert_eq!(sizes.of(Listed::LcmOpOccs), 1);
    assert_eq!(sizes.of(Listed::Alarms), 20);
    let refused = serve_args(&["--page-size-of", "instances=1"])
        .unwrap_err()
        .to_string();
    assert!(refused.contains("no list is named"), "{refused}");
    assert!(serve_args(&["--page-size", "0"]).is_err());
    assert!(serve_args(&["--page-size-of", "alarms=5000"]).is_err());
}
