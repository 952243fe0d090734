//! `vnfm vnf export`: every VNF instance (or those a filter selects), whole, one JSON document
//! per line, streamed page by page so that neither the client nor the server holds more than
//! one page whatever the number of instances.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};

use clap::Args;
use serde_json::Value;

use super::Ctx;
use super::error::ClientError;

/// The instances collection.
const INSTANCES: &str = "/vnflcm/v2/vnf_instances";

/// `vnfm vnf export`.
#[derive(Debug, Args)]
pub struct ExportArgs {
    /// SOL013 attribute filter, e.g. `(eq,instantiationState,INSTANTIATED)`.
    #[arg(long)]
    pub filter: Option<String>,
    /// Write to this file instead of standard output. The file appears only once the export
    /// is complete (it is written beside it first), so a failed export never leaves a file
    /// that looks whole.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
}

/// Where the lines go.
enum Sink {
    /// Standard output; a closed pipe (`| head`) ends the export quietly.
    Stdout(std::io::StdoutLock<'static>),
    /// A file written beside its final name, renamed into place at the end.
    File {
        out: BufWriter<File>,
        partial: PathBuf,
        target: PathBuf,
    },
}

impl Sink {
    fn open(file: Option<&Path>) -> Result<Sink, ClientError> {
        let Some(target) = file else {
            return Ok(Sink::Stdout(std::io::stdout().lock()));
        };
        let mut partial = target.as_os_str().to_owned();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        let out = File::create(&partial).map_err(|e| {
            ClientError::Output(std::io::Error::new(
                e.kind(),
                format!("cannot create {}: {e}", partial.display()),
            ))
        })?;
        Ok(Sink::File {
            out: BufWriter::new(out),
            partial,
            target: target.to_owned(),
        })
    }

    /// One document, one line; breaks when the reader of standard output went away.
    fn line(&mut self, item: &Value) -> Result<ControlFlow<()>, ClientError> {
        let out: &mut dyn Write = match self {
            Sink::Stdout(out) => out,
            Sink::File { out, .. } => out,
        };
        let written = serde_json::to_writer(&mut *out, item)
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"));
        match written {
            Ok(()) => Ok(ControlFlow::Continue(())),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe && self.is_stdout() => {
                Ok(ControlFlow::Break(()))
            }
            Err(e) => Err(ClientError::Output(e)),
        }
    }

    fn is_stdout(&self) -> bool {
        matches!(self, Sink::Stdout(_))
    }

    /// Flushes and, for a file, moves it into place.
    fn finish(self) -> Result<(), ClientError> {
        match self {
            Sink::Stdout(mut out) => match out.flush() {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(ClientError::Output(e)),
                _ => Ok(()),
            },
            Sink::File {
                out,
                partial,
                target,
            } => {
                let file = out
                    .into_inner()
                    .map_err(|e| ClientError::Output(e.into_error()))?;
                file.sync_all().map_err(ClientError::Output)?;
                std::fs::rename(&partial, &target).map_err(|e| {
                    ClientError::Output(std::io::Error::new(
                        e.kind(),
                        format!(
                            "cannot move {} to {}: {e}",
                            partial.display(),
                            target.display()
                        ),
                    ))
                })
            }
        }
    }

    /// Removes what a failed export wrote.
    fn abandon(self) {
        if let Sink::File { partial, .. } = self {
            let _ = std::fs::remove_file(partial);
        }
    }
}

/// Runs `vnfm vnf export`: pages of whole instances (`all_fields`), each line written as its
/// page arrives. Reports the count on standard error when writing to a file.
pub async fn run(ctx: &Ctx, args: ExportArgs) -> Result<(), ClientError> {
    let mut query = vec![("all_fields", String::new())];
    if let Some(f) = args.filter {
        query.push(("filter", f));
    }
    let api = ctx.api()?;
    let mut sink = Sink::open(args.file.as_deref())?;
    let walked = api
        .each_page(INSTANCES, &query, |items| {
            for item in &items {
                if sink.line(item)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
            Ok(ControlFlow::Continue(()))
        })
        .await;
    match walked {
        Ok(count) => {
            sink.finish()?;
            if let Some(file) = &args.file {
                eprintln!("exported {count} VNF instances to {}", file.display());
            }
            Ok(())
        }
        Err(e) => {
            sink.abandon();
            Err(e)
        }
    }
}
