//! The table of services. Compiled into both `vnfm-test-env` and its macro crate (which reads
//! the reasons from it when it expands `#[needs(...)]`), so it is written once.

/// A service some tests need: a server or library that a script of `scripts/test-env/` starts
/// or installs and describes in environment variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Service {
    /// The name tests give it (`#[needs(postgres)]`); its build-time cfg is
    /// `vnfm_test_<name>`.
    pub name: &'static str,
    /// What it is, as the ignore reason names it.
    pub what: &'static str,
    /// The variables that describe it; the service is there when all are set (non-empty).
    /// Each is one that the script of [`Service::start`] declares in
    /// `scripts/test-env/services.tsv` (the test `services_tsv` checks).
    pub vars: &'static [&'static str],
    /// How to start it: a shell command that sets [`Service::vars`].
    pub start: &'static str,
    /// Whether `scripts/test.sh` starts it: when the `CI` variable is set, the tests of such
    /// a service are built to run whatever the other variables say, so that a missing
    /// service fails them.
    pub in_ci: bool,
    /// How a build script tells that it is there.
    pub found: Found,
}

/// How a build script (and the run-time guard) tells that a service is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// All of [`Service::vars`] are set (non-empty).
    VarsSet,
    /// A directory exists: the corpus, where `vnfm_test_env::corpus_dir` says (the one
    /// variable of [`Service::vars`] when set, else `shared/corpus` beside the checkout).
    CorpusDir,
}

/// Every service, by [`Service::name`].
pub const SERVICES: &[Service] = &[
    Service {
        name: "corpus",
        what: "the corpus of inputs nobody here wrote (Tacker's sample packages, the ETSI API \
               test suites, ASD samples)",
        vars: &["VNFM_CORPUS_DIR"],
        start: "put it at ../shared/corpus beside the checkout, or export VNFM_CORPUS_DIR=<its path>",
        in_ci: true,
        found: Found::CorpusDir,
    },
    Service {
        name: "postgres",
        what: "PostgreSQL",
        vars: &["VNFM_TEST_POSTGRES_URL"],
        start: "export VNFM_TEST_POSTGRES_URL=$(scripts/test-env/postgres.sh start)",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "sshd",
        what: "the SSH test hosts",
        vars: &["VNFM_TEST_SSHD"],
        start: "export VNFM_TEST_SSHD=$(scripts/test-env/sshd.sh start 4)",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "keystone",
        what: "Keystone",
        vars: &["VNFM_TEST_KEYSTONE_URL", "VNFM_TEST_OS_ADMIN_PASSWORD"],
        start: "export VNFM_OS_DIR=$(mktemp -d); eval \"$(scripts/test-env/openstack.sh start)\"",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "openstack",
        what: "the OpenStack test cloud (Keystone, Heat, Nova, Neutron, Placement, Glance, Cinder)",
        vars: &[
            "VNFM_TEST_KEYSTONE_URL",
            "VNFM_TEST_HEAT_URL",
            "VNFM_TEST_NOVA_URL",
            "VNFM_TEST_NEUTRON_URL",
            "VNFM_TEST_GLANCE_URL",
            "VNFM_TEST_CINDER_URL",
            "VNFM_TEST_OS_PASSWORD",
            "VNFM_TEST_OS_ADMIN_PASSWORD",
        ],
        start: "export VNFM_OS_DIR=$(mktemp -d); eval \"$(scripts/test-env/openstack.sh start)\"",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "openstack_cli",
        what: "the OpenStack client with the Tacker plugin",
        vars: &["VNFM_TEST_OPENSTACK_CLI"],
        start: "export VNFM_OS_DIR=$(mktemp -d); eval \"$(scripts/test-env/openstack.sh start)\"",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "tacker_source",
        what: "OpenStack Tacker's source distribution (its sample files)",
        vars: &["VNFM_TEST_TACKER_SOURCE"],
        start: "eval \"$(scripts/tacker-functional.sh --source)\"",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "prometheus",
        what: "Prometheus and Alertmanager",
        vars: &[
            "VNFM_TEST_PROMETHEUS_URL",
            "VNFM_TEST_ALERTMANAGER_URL",
            "VNFM_TEST_PROM_DIR",
        ],
        start: "export VNFM_PROM_DIR=$(mktemp -d); eval \"$(scripts/test-env/prometheus.sh start)\"",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "otel_collector",
        what: "the OpenTelemetry Collector",
        vars: &["VNFM_TEST_OTLP_URL", "VNFM_TEST_OTLP_SPANS_FILE"],
        start: "export VNFM_OTELCOL_DIR=$(mktemp -d); eval \"$(scripts/test-env/otel-collector.sh start)\"",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "keycloak",
        what: "Keycloak (an external OAuth 2.0 authorization server)",
        vars: &[
            "VNFM_TEST_KEYCLOAK_URL",
            "VNFM_TEST_KEYCLOAK_ISSUER",
            "VNFM_TEST_KEYCLOAK_ADMIN_PASSWORD",
            "VNFM_TEST_KEYCLOAK_DIR",
        ],
        start: "export VNFM_KEYCLOAK_DIR=$(mktemp -d); eval \"$(scripts/test-env/keycloak.sh start)\"",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "helm",
        what: "the Helm SDK library",
        vars: &["VNFM_HELM_C_LIB"],
        start: "export VNFM_HELM_C_LIB=$(scripts/test-env/helm.sh)",
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "kubernetes",
        what: "the Kubernetes control plane",
        vars: &[
            "KUBECONFIG",
            "VNFM_TEST_KUBE_SERVER",
            "VNFM_TEST_KUBE_CA_FILE",
            "VNFM_TEST_KUBE_TOKEN_FILE",
        ],
        start: KUBE_START,
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "kubeconfig",
        what: "a Kubernetes cluster (the current context of KUBECONFIG)",
        vars: &["KUBECONFIG"],
        start: KUBE_START,
        in_ci: true,
        found: Found::VarsSet,
    },
    Service {
        name: "kwok",
        what: "the test environment's Kubernetes control plane with KWOK's simulated pods",
        vars: &[
            "KUBECONFIG",
            "VNFM_TEST_KUBE_READY_DELAY_MS",
            "VNFM_TEST_KUBE_FAILING_IMAGE",
            "VNFM_TEST_KUBE_AUDIT_LOG",
            "VNFM_TEST_KUBE_NS",
            "VNFM_TEST_KUBE_NS_TOKEN_FILE",
        ],
        start: KUBE_START,
        in_ci: true,
        found: Found::VarsSet,
    },
];

/// How the test environment's Kubernetes control plane is started (kube-apiserver,
/// controller-manager and scheduler with KWOK's nodes): the services `kubernetes`,
/// `kubeconfig` and `kwok` name it alike, so one reason names them together.
const KUBE_START: &str =
    "export VNFM_KUBE_DIR=$(mktemp -d); eval \"$(scripts/test-env/kubernetes.sh start)\"";

/// The service called `name`.
pub fn service(name: &str) -> Option<&'static Service> {
    SERVICES.iter().find(|s| s.name == name)
}

/// The names of all services, for messages.
pub fn names() -> String {
    SERVICES
        .iter()
        .map(|s| s.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The ignore reason of a test that needs `services`: `needs <what>: <start>`, the services
/// started by one command named together, the commands joined by `; `.
pub fn reason(services: &[&Service]) -> String {
    let mut parts: Vec<(String, &str)> = Vec::new();
    for s in services {
        match parts.iter_mut().find(|(_, start)| *start == s.start) {
            Some((what, _)) => {
                what.push_str(" and ");
                what.push_str(s.what);
            }
            None => parts.push((s.what.to_owned(), s.start)),
        }
    }
    parts
        .iter()
        .map(|(what, start)| format!("needs {what}: {start}"))
        .collect::<Vec<_>>()
        .join("; ")
}
