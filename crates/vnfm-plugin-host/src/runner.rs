//! The isolated runner: the body of the `vnfm-plugin-runner` binary.
//!
//! Loads one library (checking the ABI version and the handshake like the in-process host), announces
//! itself, runs the one call the host sends, answers and exits. Package reads and log lines
//! of the plugin travel to the host as frames (see [`crate::frames`]).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use vnfm_plugin_abi::ffi as abi;
use vnfm_plugin_abi::protocol::{ErrorKind, Request, Response, WireError};

use crate::frames::{HostFrame, RunnerFrame, runner_line};
use crate::library::{CallServices, Library};

type Pending = Arc<Mutex<HashMap<u64, mpsc::Sender<(i32, Vec<u8>)>>>>;

fn write(frame: &RunnerFrame) {
    let mut out = std::io::stdout().lock();
    // A host that went away cannot be told anything more.
    let _ = out.write_all(runner_line(frame).as_bytes());
    let _ = out.flush();
}

struct ChildServices {
    pending: Pending,
    next: AtomicU64,
    cancelled: Arc<AtomicBool>,
}

impl CallServices for ChildServices {
    fn read_file(&self, path: &str) -> Result<Vec<u8>, (i32, String)> {
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        write(&RunnerFrame::Read {
            id,
            path: path.to_string(),
        });
        match rx.recv() {
            Ok((abi::READ_OK, data)) => Ok(data),
            Ok((status, data)) => Err((status, String::from_utf8_lossy(&data).into_owned())),
            Err(_) => Err((abi::READ_ERROR, "the host went away".to_string())),
        }
    }

    fn log(&self, level: u32, message: &str) {
        write(&RunnerFrame::Log {
            level,
            message: message.to_string(),
        });
    }

    fn is_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }
}

/// Runs the runner with the process's arguments (`vnfm-plugin-runner <library>`).
pub fn main() -> ExitCode {
    let Some(path) = std::env::args_os().nth(1).map(PathBuf::from) else {
        eprintln!("usage: vnfm-plugin-runner <plugin library>");
        return ExitCode::from(2);
    };
    run(&path)
}

/// Runs the runner for the library at `path`, speaking the runner protocol on stdin and
/// stdout: for programs that embed the runner behind a subcommand (see
/// [`crate::HostConfig::runner_command`]). Nothing else may write to stdout meanwhile.
pub fn run(path: &std::path::Path) -> ExitCode {
    let lib = match Library::open(path) {
        Ok(l) => l,
        Err(e) => {
            write(&RunnerFrame::Failed {
                error: WireError {
                    kind: ErrorKind::Protocol,
                    message: e.full_message(),
                },
            });
            return ExitCode::from(3);
        }
    };
    write(&RunnerFrame::Ready {
        hello: lib.hello().clone(),
    });
    let pending: Pending = Arc::default();
    let cancelled = Arc::new(AtomicBool::new(false));
    let (call_tx, call_rx) = mpsc::channel::<Request>();
    {
        let pending = pending.clone();
        let cancelled = cancelled.clone();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                match serde_json::from_str::<HostFrame>(&line) {
                    Ok(HostFrame::Call { request }) => {
                        let _ = call_tx.send(request);
                    }
                    Ok(HostFrame::File { id, status, data }) => {
                        let bytes = STANDARD.decode(data.as_bytes()).unwrap_or_default();
                        let waiter = pending
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .remove(&id);
                        if let Some(tx) = waiter {
                            let _ = tx.send((status, bytes));
                        }
                    }
                    Ok(HostFrame::Cancel) => cancelled.store(true, Ordering::SeqCst),
                    Err(e) => eprintln!("vnfm-plugin-runner: unreadable host frame: {e}"),
                }
            }
            // The host is gone: whatever runs should stop.
            cancelled.store(true, Ordering::SeqCst);
            pending.lock().unwrap_or_else(|e| e.into_inner()).clear();
        });
    }
    let Ok(request) = call_rx.recv() else {
        return ExitCode::SUCCESS;
    };
    let services = ChildServices {
        pending,
        next: AtomicU64::new(1),
        cancelled,
    };
    let response = lib.call(&request, &services).unwrap_or_else(|e| {
        Response::Error(WireError {
            kind: ErrorKind::Protocol,
            message: e.full_message(),
        })
    });
    write(&RunnerFrame::Response { response });
    ExitCode::SUCCESS
}
