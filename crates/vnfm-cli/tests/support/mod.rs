//! What the `vnfm` binary's integration tests share: starting `vnfm serve` and stopping it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The `vnfm` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_vnfm");

/// `vnfm serve` on an ephemeral loopback port with its data in `data_dir`; tests add their
/// options (and choose where standard error goes) before [`Server::spawn`].
pub fn serve_command(data_dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["serve", "--listen", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(data_dir);
    command
}

/// A `vnfm serve` process started by a test; killed when dropped.
pub struct Server {
    /// The process.
    pub child: Child,
    /// The address it printed (`http://127.0.0.1:PORT`).
    pub base: String,
}

impl Server {
    /// Starts `command`, waits (60 s at most) for the address it prints, and returns the
    /// server with the `after` lines it printed next; the rest of its standard output is
    /// read and dropped so that it never blocks on a full pipe.
    pub fn spawn(mut command: Command, after: usize) -> (Server, Vec<String>) {
        let mut child = command
            .stdout(Stdio::piped())
            .spawn()
            .expect("vnfm serve starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout piped")).lines();
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut printed = Vec::new();
        let base = loop {
            assert!(
                Instant::now() < deadline,
                "vnfm serve printed no address: {printed:?}"
            );
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("vnfm serve ended printing no address: {printed:?}"))
                .expect("server output is text");
            if let Some(addr) = line.strip_prefix("vnfm listening on ") {
                break addr.trim().to_owned();
            }
            printed.push(line);
        };
        let next = lines
            .by_ref()
            .take(after)
            .map(|l| l.expect("server output is text"))
            .collect();
        std::thread::spawn(move || for _ in lines {});
        (Server { child, base }, next)
    }

    /// SIGTERM and wait (30 s at most): the server stops gracefully, its data kept.
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.child.try_wait().expect("wait").is_none() {
            assert!(Instant::now() < deadline, "vnfm serve did not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
