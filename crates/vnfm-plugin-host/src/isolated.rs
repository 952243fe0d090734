//! Running one hook call in a child process (the `vnfm-plugin-runner` binary).

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, ChildStdout, Command};
use vnfm_driver_api::RunControl;
use vnfm_plugin_abi::protocol::{Request, Response};

use crate::HostError;
use crate::frames::{HostFrame, RunnerFrame, parse_runner_line};
use crate::host::{CallCtx, Stop, poll_control};
use crate::library::{CallServices, check_hello};

async fn send(stdin: &mut ChildStdin, frame: &HostFrame) -> std::io::Result<()> {
    let mut line = serde_json::to_string(frame).map_err(std::io::Error::other)?;
    line.push('\n');
    stdin.write_all(line.as_bytes()).await?;
    stdin.flush().await
}

/// How a finished process ended, in words.
fn describe(status: std::io::Result<std::process::ExitStatus>) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        Ok(s) => match (s.code(), s.signal()) {
            (Some(c), _) => format!("exited with status {c} before answering"),
            (None, Some(6)) => "was aborted (signal 6, SIGABRT)".to_string(),
            (None, Some(11)) => "crashed (signal 11, SIGSEGV)".to_string(),
            (None, Some(9)) => "was killed (signal 9, SIGKILL)".to_string(),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            (None, None) => "ended without an exit status".to_string(),
        },
        Err(e) => format!("could not be waited for: {e}"),
    }
}

/// One line of the runner's output.
enum OutputLine {
    /// A line with its newline (which is removed).
    Whole(String),
    /// What was left without a newline when the output ended: a process killed while it
    /// wrote a line.
    Torn(String),
    /// The output ended after a whole line.
    End,
}

/// Reads the next line into `buf`. Cancel-safe: bytes read before a cancellation stay in
/// `buf` and the next call goes on from them; `buf` is emptied once a line is taken.
async fn next_output_line(
    out: &mut BufReader<ChildStdout>,
    buf: &mut Vec<u8>,
) -> std::io::Result<OutputLine> {
    out.read_until(b'\n', buf).await?;
    let line = match buf.strip_suffix(b"\n") {
        Some(whole) => OutputLine::Whole(String::from_utf8_lossy(whole).into_owned()),
        None if buf.is_empty() => OutputLine::End,
        None => OutputLine::Torn(String::from_utf8_lossy(buf).into_owned()),
    };
    buf.clear();
    Ok(line)
}

/// Runs `request` in a fresh runner process that loads `library`. With `observe`, the call is
/// only made when the plugin's handshake says it observes (else
/// [`HostError::DoesNotObserve`]).
pub(crate) async fn run(
    runner: &Path,
    runner_args: &[String],
    library: &Path,
    request: Request,
    ctx: Arc<CallCtx>,
    control: &RunControl,
    observe: bool,
) -> Result<Result<Response, HostError>, Stop> {
    let hook = match &request {
        Request::Hook(h) => h.hook.clone(),
        Request::Hello(_) => "handshake".to_string(),
    };
    let plugin = library.display().to_string();
    let protocol = |message: String| HostError::Protocol {
        plugin: plugin.clone(),
        message,
    };
    let mut child = match Command::new(runner)
        .args(runner_args)
        .arg(library)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(c) => c,
        Err(source) => {
            return Ok(Err(HostError::RunnerSpawn {
                runner: runner.to_path_buf(),
                source,
            }));
        }
    };
    let (Some(mut stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Ok(Err(protocol("the runner's pipes are missing".into())));
    };
    // The plugin's stderr (panic messages, its own prints) goes to the log.
    let err_ctx = ctx.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if !line.trim().is_empty() {
                tracing::warn!(target: "vnfm_plugin", plugin_stderr = true, "{}", err_ctx.redact(&line));
            }
        }
    });
    let mut out = BufReader::new(stdout);
    let mut buf = Vec::new();
    let mut request = Some(request);
    loop {
        let line = tokio::select! {
            line = next_output_line(&mut out, &mut buf) => line,
            stop = poll_control(control) => {
                if let Some(stop) = stop {
                    ctx.cancel();
                    // Best effort: the runner raises the plugin's flag, then it is killed.
                    let _ = send(&mut stdin, &HostFrame::Cancel).await;
                    let _ = child.start_kill();
                    return Err(stop);
                }
                continue;
            }
        };
        let line = match line {
            Ok(OutputLine::Whole(l)) => l,
            Ok(OutputLine::End) => {
                let status = describe(child.wait().await);
                return Ok(Err(HostError::Crashed {
                    plugin,
                    hook,
                    status,
                }));
            }
            // A frame cut off by the runner's death is a crash, not a protocol error; a
            // plugin's own output without a newline is logged like any other.
            Ok(OutputLine::Torn(tail)) => {
                let cut = parse_runner_line(&tail).map(|_| tail.len());
                if cut.is_none() && !tail.trim().is_empty() {
                    tracing::info!(target: "vnfm_plugin", plugin_stdout = true, "{}", ctx.redact(&tail));
                }
                let mut status = describe(child.wait().await);
                if let Some(bytes) = cut {
                    status.push_str(&format!(
                        " while it wrote a frame ({bytes} bytes of it arrived)"
                    ));
                }
                return Ok(Err(HostError::Crashed {
                    plugin,
                    hook,
                    status,
                }));
            }
            Err(e) => {
                return Ok(Err(protocol(format!(
                    "reading the runner's output failed: {e}"
                ))));
            }
        };
        let frame = match parse_runner_line(&line) {
            None => {
                if !line.trim().is_empty() {
                    tracing::info!(target: "vnfm_plugin", plugin_stdout = true, "{}", ctx.redact(&line));
                }
                continue;
            }
            Some(Err(e)) => return Ok(Err(protocol(format!("unreadable runner frame: {e}")))),
            Some(Ok(f)) => f,
        };
        match frame {
            RunnerFrame::Ready { hello } => {
                let observes = hello.observes;
                if let Err(e) = check_hello(library, Response::Hello(hello)) {
                    return Ok(Err(e));
                }
                if observe && !observes {
                    let _ = child.start_kill();
                    return Ok(Err(HostError::DoesNotObserve { plugin }));
                }
                let Some(request) = request.take() else {
                    return Ok(Err(protocol("the runner said ready twice".into())));
                };
                if let Err(e) = send(&mut stdin, &HostFrame::Call { request }).await {
                    return Ok(Err(protocol(format!("sending the call failed: {e}"))));
                }
            }
            RunnerFrame::Failed { error } => return Ok(Err(protocol(error.message))),
            RunnerFrame::Read { id, path } => {
                let (status, data) = match ctx.read_file(&path) {
                    Ok(b) => (vnfm_plugin_abi::ffi::READ_OK, b),
                    Err((s, m)) => (s, m.into_bytes()),
                };
                let frame = HostFrame::File {
                    id,
                    status,
                    data: STANDARD.encode(data),
                };
                if let Err(e) = send(&mut stdin, &frame).await {
                    return Ok(Err(protocol(format!("sending a file failed: {e}"))));
                }
            }
            RunnerFrame::Log { level, message } => ctx.log(level, &message),
            RunnerFrame::Response { response } => {
                drop(stdin);
                // The runner exits by itself once it has answered.
                let _ = child.wait().await;
                return Ok(Ok(response));
            }
        }
    }
}
