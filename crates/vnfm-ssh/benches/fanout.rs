//! Fan-out of one command over SSH: 1 host vs N hosts (all the hosts `sshd.sh` started; the
//! target is N = 50) at concurrency N and 10. Each iteration connects (key auth, pinned host
//! key), runs the command, and disconnects, on every host. Two commands: `true`, which
//! measures connection handling alone, and `sleep 1`, a command that spends a second on the
//! host as real work does (the case fan-out exists for: the hosts' work overlaps).
//!
//!   export VNFM_TEST_SSHD=$(VNFM_SSHD_DIR=/tmp/vnfm-bench-sshd VNFM_SSHD_USER=vnfm-ssh-bench \
//!       scripts/test-env/sshd.sh start 50)
//!   cargo bench -p vnfm-ssh --bench fanout
//!
//! `VNFM_SSHD_USER` logs in as a user whose shell is a plain `/bin/sh`, like a VM image's
//! default user: every SSH command runs the login user's shell, and the current user's
//! start-up files (on a developer machine, `~/.bashrc` with version managers) would
//! otherwise be part of every figure.
//!
//! Without VNFM_TEST_SSHD the benchmark says so and measures nothing.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use vnfm_ssh::testing::TestHosts;
use vnfm_ssh::{ConnectOptions, RemoteCommand, run_on_all};

fn fanout(c: &mut Criterion) {
    if std::env::var_os(TestHosts::ENV).is_none() {
        eprintln!(
            "the fanout benchmark measures nothing: {} is not set (see its documentation)",
            TestHosts::ENV
        );
        return;
    }
    let hosts = TestHosts::from_env();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let n = hosts.hosts.len();
    let targets: Vec<_> = (0..n).map(|i| hosts.target(i)).collect();
    let run_command = |command: &RemoteCommand, count: usize, limit: usize| {
        let results = rt.block_on(run_on_all(
            targets[..count].to_vec(),
            command.clone(),
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
    let noop = RemoteCommand::new("true");
    let run = |count: usize, limit: usize| run_command(&noop, count, limit);
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

    let sleep = RemoteCommand::new("sleep").arg("1");
    let mut g = c.benchmark_group("ssh_fanout_sleep_1s");
    g.sample_size(10);
    g.bench_function("1_host", |b| b.iter(|| run_command(&sleep, 1, 1)));
    g.bench_function(format!("{n}_hosts_concurrency_{n}"), |b| {
        b.iter(|| run_command(&sleep, n, n))
    });
    g.finish();
}

criterion_group!(benches, fanout);
criterion_main!(benches);
