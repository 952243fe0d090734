//! Fan-out of one command over SSH: 1 host vs N hosts (all the hosts `sshd.sh` started; the
//! target is N = 50) at concurrency N and 10. Each iteration connects (key auth, pinned host
//! key), runs `true`, and disconnects, on every host.
//!
//!   export VNFM_TEST_SSHD=$(VNFM_SSHD_DIR=/tmp/vnfm-bench-sshd scripts/test-env/sshd.sh start 50)
//!   cargo bench -p vnfm-ssh --bench fanout
//!
//! Without VNFM_TEST_SSHD the benchmark prints a SKIPPED line and measures nothing.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use vnfm_ssh::testing::TestHosts;
use vnfm_ssh::{ConnectOptions, RemoteCommand, run_on_all};

fn fanout(c: &mut Criterion) {
    let Some(hosts) = TestHosts::for_test("fanout benchmark") else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let n = hosts.hosts.len();
    let targets: Vec<_> = (0..n).map(|i| hosts.target(i)).collect();
    let run = |count: usize, limit: usize| {
        let results = rt.block_on(run_on_all(
            targets[..count].to_vec(),
            RemoteCommand::new("true"),
            ConnectOptions::default(),
            Duration::from_secs(30),
            limit,
        ));
        for r in &results {
            if let Err(e) = &r.result {
                panic!("{}: {e}", r.host);
            }
        }
    };
    let mut g = c.benchmark_group("ssh_fanout");
    g.sample_size(10);
    g.bench_function("1_host", |b| b.iter(|| run(1, 1)));
    g.bench_function(format!("{n}_hosts_concurrency_{n}"), |b| {
        b.iter(|| run(n, n))
    });
    g.bench_function(format!("{n}_hosts_concurrency_10"), |b| {
        b.iter(|| run(n, 10))
    });
    g.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
