//! What a phase measures and how it is reported: the settings from the environment, the
//! CPU and memory read from `/proc`, one phase's [`Figures`], and the [`Table`] of every run's
//! figures with their medians.

use std::collections::BTreeMap;
use std::time::Duration;

/// The number in environment variable `name`, else `default`.
pub(crate) fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p` quantile (0 to 1) of `sorted`, zero when it is empty.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// CPU time (user + system, all threads) process `pid` has used, in seconds. Linux counts it
/// in USER_HZ ticks, 100 per second on every architecture this runs on.
pub(crate) fn cpu_seconds(pid: &str) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (tick(11), tick(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => 0.0,
    }
}

/// CPU time (user + system) of the PostgreSQL server whose postmaster is `pid`, in seconds:
/// the postmaster's own, its children's that it reaped (backends of closed connections), and
/// that of its live children (backends, background workers).
pub(crate) fn postgres_cpu_seconds(pid: &str) -> f64 {
    let fields = |stat: &str| -> Vec<String> {
        stat.rsplit_once(')')
            .map(|(_, rest)| rest.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let ticks = |f: &[String], range: std::ops::Range<usize>| -> f64 {
        range
            .filter_map(|i| f.get(i).and_then(|v| v.parse::<f64>().ok()))
            .sum()
    };
    let own = fields(&std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default());
    // utime, stime, cutime, cstime.
    let mut total = ticks(&own, 11..15);
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let f = fields(&stat);
        if f.get(1).map(String::as_str) == Some(pid) {
            total += ticks(&f, 11..13);
        }
    }
    total / 100.0
}

/// A line of `/proc/<pid>/status` (`VmRSS`), in MiB.
pub(crate) fn status_mib(pid: &str, key: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(key))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

/// The machine's 1-minute load average, as `uptime` shows it.
pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_owned))
        .unwrap_or_default()
}

/// One phase's result.
pub(crate) struct Figures {
    /// Operations per second.
    rate: f64,
    p50: Duration,
    p99: Duration,
    /// Server CPU per operation.
    cpu: Duration,
    /// The load generator's own CPU per operation.
    client_cpu: Duration,
    /// The PostgreSQL server's CPU per operation, when it is measured.
    db_cpu: Option<Duration>,
    errors: u64,
}

/// CPU seconds used so far by the server and by this process, the client.
#[derive(Clone, Copy)]
pub(crate) struct Cpu {
    pub(crate) server: f64,
    pub(crate) client: f64,
    /// The PostgreSQL server's, when it is measured.
    pub(crate) db: Option<f64>,
}

impl std::ops::Sub for Cpu {
    type Output = Cpu;
    fn sub(self, earlier: Cpu) -> Cpu {
        Cpu {
            server: self.server - earlier.server,
            client: self.client - earlier.client,
            db: self.db.zip(earlier.db).map(|(now, then)| now - then),
        }
    }
}

impl Figures {
    pub(crate) fn from(
        ops: u64,
        mut latencies: Vec<Duration>,
        elapsed: Duration,
        cpu: Cpu,
        errors: u64,
    ) -> Figures {
        latencies.sort_unstable();
        let per_op = |seconds: f64| {
            Duration::from_secs_f64(if ops == 0 { 0.0 } else { seconds / ops as f64 })
        };
        Figures {
            rate: ops as f64 / elapsed.as_secs_f64(),
            p50: percentile(&latencies, 0.5),
            p99: percentile(&latencies, 0.99),
            cpu: per_op(cpu.server),
            client_cpu: per_op(cpu.client),
            db_cpu: cpu.db.map(per_op),
            errors,
        }
    }
}

/// The figures of every run, by measure name (in the order first seen).
#[derive(Default)]
pub(crate) struct Table {
    order: Vec<String>,
    runs: BTreeMap<String, Vec<Figures>>,
    notes: BTreeMap<String, Vec<f64>>,
}

impl Table {
    pub(crate) fn add(&mut self, run: u64, name: &str, unit: &str, f: Figures) {
        println!(
            "run {run}: {name}: {:.0} {unit}/s, p50 {:.2} ms, p99 {:.2} ms, server CPU {:.3} ms per {unit}, client CPU {:.3} ms{}{}",
            f.rate,
            f.p50.as_secs_f64() * 1e3,
            f.p99.as_secs_f64() * 1e3,
            f.cpu.as_secs_f64() * 1e3,
            f.client_cpu.as_secs_f64() * 1e3,
            f.db_cpu.map_or(String::new(), |d| format!(
                ", PostgreSQL CPU {:.3} ms",
                d.as_secs_f64() * 1e3
            )),
            if f.errors > 0 {
                format!(", {} ERRORS", f.errors)
            } else {
                String::new()
            }
        );
        if !self.runs.contains_key(name) {
            self.order.push(name.to_owned());
        }
        self.runs.entry(name.to_owned()).or_default().push(f);
    }

    pub(crate) fn note(&mut self, name: &str, value: f64) {
        self.notes.entry(name.to_owned()).or_default().push(value);
    }

    pub(crate) fn print(&self) {
        let summary = |mut v: Vec<f64>, digits: usize| {
            v.sort_by(f64::total_cmp);
            let (lo, hi) = (v[0], v[v.len() - 1]);
            let median = v[v.len() / 2];
            format!("{median:.digits$} [{lo:.digits$}-{hi:.digits$}]")
        };
        println!(
            "\nmedians of {} runs [min-max]:",
            self.runs.values().next().map_or(0, Vec::len)
        );
        let db = self.runs.values().flatten().any(|f| f.db_cpu.is_some());
        println!(
            "| measure | per second | p50 ms | p99 ms | server CPU ms per op | client CPU ms per op |{} errors |",
            if db {
                " PostgreSQL CPU ms per op |"
            } else {
                ""
            }
        );
        println!(
            "|---|---|---|---|---|---|{}---|",
            if db { "---|" } else { "" }
        );
        for name in &self.order {
            let runs = &self.runs[name];
            let pick = |f: &dyn Fn(&Figures) -> f64| runs.iter().map(f).collect::<Vec<f64>>();
            let db_cpu = if db {
                format!(
                    " {} |",
                    summary(
                        pick(&|f| f.db_cpu.unwrap_or_default().as_secs_f64() * 1e3),
                        3
                    )
                )
            } else {
                String::new()
            };
            println!(
                "| {name} | {} | {} | {} | {} | {} |{db_cpu} {} |",
                summary(pick(&|f| f.rate), 0),
                summary(pick(&|f| f.p50.as_secs_f64() * 1e3), 2),
                summary(pick(&|f| f.p99.as_secs_f64() * 1e3), 2),
                summary(pick(&|f| f.cpu.as_secs_f64() * 1e3), 3),
                summary(pick(&|f| f.client_cpu.as_secs_f64() * 1e3), 3),
                runs.iter().map(|f| f.errors).sum::<u64>(),
            );
        }
        for (name, values) in &self.notes {
            println!("{name}: {}", summary(values.clone(), 1));
        }
    }
}
