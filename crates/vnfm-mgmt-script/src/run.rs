//! Running the interpreter: its own process group, input on stdin, bounded output capture,
//! deadline and cancellation.
//!
//! The script is the leader of a new process group (`setpgid(0, 0)` through
//! `Command::process_group`), so everything it starts can be signalled at once with
//! `kill(-pgid)`. The group is killed (SIGKILL) on timeout, on cancellation, when the script
//! exits (whatever it left running in its group), and when the future running it is dropped.

use std::ffi::OsString;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use vnfm_driver_api::RunControl;

use crate::ScriptError;

/// How often the cancellation flag is looked at while the script runs.
const CANCEL_POLL: Duration = Duration::from_millis(50);
/// How long the output readers may take to finish once the group has been killed.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What a finished script left.
pub(crate) struct Finished {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stdout_overflow: bool,
    pub(crate) stderr_tail: Vec<u8>,
}

/// The command line and limits of one run.
pub(crate) struct Invocation<'a> {
    pub(crate) python: &'a Path,
    pub(crate) args: Vec<OsString>,
    pub(crate) cwd: &'a Path,
    pub(crate) env: Vec<(OsString, OsString)>,
    pub(crate) stdin: Vec<u8>,
    pub(crate) stdout_limit: usize,
    pub(crate) stderr_limit: usize,
}

/// Kills the process group when dropped, unless disarmed (nothing left to kill).
struct GroupGuard(Option<rustix::process::Pid>);

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.0 {
            // ESRCH (the group is gone) is the expected answer once everything exited.
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Runs the invocation to its end, its deadline or its cancellation.
pub(crate) async fn run(
    inv: Invocation<'_>,
    control: &RunControl,
) -> Result<Finished, ScriptError> {
    let mut cmd = Command::new(inv.python);
    cmd.args(&inv.args)
        .current_dir(inv.cwd)
        .env_clear()
        .envs(inv.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|source| ScriptError::Spawn {
        python: inv.python.display().to_string(),
        source,
    })?;
    let mut guard = GroupGuard(
        child
            .id()
            .and_then(|pid| rustix::process::Pid::from_raw(pid as i32)),
    );
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ScriptError::Wait(std::io::Error::other(
            "the script's standard streams were not captured",
        )));
    };
    let input = inv.stdin;
    // A script that never reads its input must not block us: write from a task of its own
    // and ignore a closed pipe.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
        let _ = stdin.shutdown().await;
    });
    let out_reader = tokio::spawn(read_head(stdout, inv.stdout_limit));
    let err_reader = tokio::spawn(read_tail(stderr, inv.stderr_limit));

    let deadline = tokio::time::Instant::from_std(control.deadline());
    let mut stop = None;
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.map_err(ScriptError::Wait)?,
            _ = tokio::time::sleep_until(deadline), if stop.is_none() => {
                stop = Some(ScriptError::Timeout(control.budget()));
                guard.kill();
            }
            _ = tokio::time::sleep(CANCEL_POLL), if stop.is_none() => {
                if control.is_cancelled() {
                    stop = Some(ScriptError::Cancelled);
                    guard.kill();
                }
            }
        }
    };
    // Whatever the script started and left in its group goes with it; this also closes the
    // pipes such processes would keep open.
    guard.kill();
    guard.0 = None;
    writer.abort();
    if let Some(stop) = stop {
        out_reader.abort();
        err_reader.abort();
        return Err(stop);
    }
    let (stdout, stdout_overflow) = joined(out_reader).await?;
    let (stderr_tail, _) = joined(err_reader).await?;
    Ok(Finished {
        status,
        stdout,
        stdout_overflow,
        stderr_tail,
    })
}

async fn joined(
    task: tokio::task::JoinHandle<std::io::Result<(Vec<u8>, bool)>>,
) -> Result<(Vec<u8>, bool), ScriptError> {
    match tokio::time::timeout(DRAIN_GRACE, task).await {
        Ok(Ok(r)) => r.map_err(ScriptError::Wait),
        Ok(Err(join)) => Err(ScriptError::Wait(std::io::Error::other(join))),
        Err(_) => Err(ScriptError::Wait(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            "the script's output did not close after it exited",
        ))),
    }
}

/// The first `limit` bytes, and whether there were more (read to the end regardless, so the
/// writer never blocks on a full pipe).
async fn read_head<R: AsyncRead + Unpin>(
    mut r: R,
    limit: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut overflow = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            return Ok((kept, overflow));
        }
        let room = limit.saturating_sub(kept.len());
        kept.extend_from_slice(&buf[..n.min(room)]);
        overflow |= n > room;
    }
}

/// The last `limit` bytes, and whether earlier bytes were dropped.
async fn read_tail<R: AsyncRead + Unpin>(
    mut r: R,
    limit: usize,
) -> std::io::Result<(Vec<u8>, bool)> {
    let mut kept = Vec::new();
    let mut dropped = false;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            return Ok((kept, dropped));
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > limit {
            let excess = kept.len() - limit;
            kept.drain(..excess);
            dropped = true;
        }
    }
}

/// The last `lines` lines of `bytes` (lossy UTF-8), without the trailing newline.
pub(crate) fn last_lines(bytes: &[u8], lines: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let all: Vec<&str> = text.trim_end().lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `exit status 3` or `killed by signal 9`.
pub(crate) fn describe(status: ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => status.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn last_lines_keeps_the_end() {
        assert_eq!(last_lines(b"a\nb\nc\n", 2), "b\nc");
        assert_eq!(last_lines(b"only", 5), "only");
        assert_eq!(last_lines(b"", 5), "");
    }

    #[tokio::test]
    async fn head_and_tail_readers_bound_what_they_keep() {
        let data: Vec<u8> = (0..200u8).collect();
        let (head, over) = read_head(&data[..], 10).await.unwrap();
        assert_eq!((head, over), ((0..10).collect(), true));
        let (tail, dropped) = read_tail(&data[..], 10).await.unwrap();
        assert_eq!((tail, dropped), ((190..200).collect(), true));
        let (all, over) = read_head(&data[..], 1000).await.unwrap();
        assert_eq!((all.len(), over), (200, false));
    }
}
