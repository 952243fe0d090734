//! Background WAL checkpoints: a connection on a thread of its own copies committed WAL frames
//! into the database file while the writer goes on committing.
//!
//! A checkpoint fsyncs the WAL, copies the newest version of each page it holds into the
//! database file and fsyncs that file. Run by the writer (SQLite's automatic checkpoint), every
//! write waits for it: under lifecycle load that was 70 to 100 ms every second, most of it the
//! fsync of the WAL written since the last one. A `PASSIVE` checkpoint on another connection
//! takes no write lock, so the writer commits meanwhile; run a few times a second, each one
//! also finds less to flush. The writer keeps its automatic checkpoint, which is what restarts
//! the WAL from its beginning (SQLite does so only once every frame is copied, which a
//! checkpoint running beside a busy writer rarely sees): by the time it is due, the
//! checkpointer has copied and flushed nearly all of it.

use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use super::conn::{db_error, is_busy};
use vnfm_store::StoreError;

/// The least time between two background checkpoints while writes go on.
pub(super) const CHECKPOINT_INTERVAL: Duration = Duration::from_millis(100);

/// The handle of the checkpointer thread; dropping it stops the thread (after the checkpoint
/// it may be running).
#[derive(Debug)]
pub(super) struct Checkpointer {
    /// One token: "something was committed since the last checkpoint".
    due: Option<SyncSender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread that checkpoints through `conn`, whose `synchronous` setting decides
    /// how the checkpoints sync, as the writer's does.
    pub(super) fn spawn(conn: Connection) -> Result<Checkpointer, StoreError> {
        let (due, commits) = mpsc::sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("vnfm-sqlite-checkpoint".into())
            .spawn(move || serve(&conn, &commits))
            .map_err(|e| {
                StoreError::Backend(format!("starting the SQLite checkpointer failed: {e}"))
            })?;
        Ok(Checkpointer {
            due: Some(due),
            thread: Some(thread),
        })
    }

    /// Notes a commit. Never blocks: a token already waiting stands for this one too.
    pub(super) fn committed(&self) {
        if let Some(due) = &self.due {
            let _ = due.try_send(());
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        self.due = None;
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// The thread's loop: waits for a commit, lets [`CHECKPOINT_INTERVAL`] of commits gather
/// (woken early only to stop), checkpoints.
fn serve(conn: &Connection, commits: &Receiver<()>) {
    while commits.recv().is_ok() {
        std::thread::park_timeout(CHECKPOINT_INTERVAL);
        if let Err(TryRecvError::Disconnected) = commits.try_recv() {
            return;
        }
        if let Err(e) = checkpoint(conn) {
            // The writer's own automatic checkpoint still bounds the WAL.
            tracing::warn!(error = %e, "background WAL checkpoint failed; the next one retries");
        }
    }
}

/// One `PASSIVE` checkpoint: copies what it can without waiting for readers or the writer. A
/// checkpoint already running elsewhere (the writer's, another process's) is not an error.
fn checkpoint(conn: &Connection) -> Result<(), StoreError> {
    match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(())) {
        Ok(()) => Ok(()),
        Err(e) if is_busy(&e) => Ok(()),
        Err(e) => Err(db_error(e).into()),
    }
}
