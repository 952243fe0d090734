//! The SQLite writer: one connection on a thread of its own, committing the writes of
//! concurrent callers together (group commit).
//!
//! Callers send their write (a job) over a channel. The thread opens a transaction, runs the
//! first job inside a savepoint, then every job that arrived meanwhile (up to [`MAX_BATCH`]),
//! each in its own savepoint, and commits once: one WAL append and, with
//! `synchronous=FULL`, one fsync for the whole batch. A job that fails is rolled back to its
//! savepoint and answered at once; the others are answered only after the commit that makes
//! them durable. While the thread commits, new jobs queue up and form the next batch, so
//! batches grow with concurrency, and a lone caller is never delayed waiting for company.

use std::future::Future;
use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::mpsc;
use std::task::{Context, Poll, Waker};

use futures_core::future::BoxFuture;
use rusqlite::Connection;
use tokio::sync::oneshot;

use super::checkpointer::Checkpointer;
use super::conn::db_error;
use vnfm_store::StoreError;

/// Most jobs committed together: bounds how long the write lock is held for other processes.
pub(super) const MAX_BATCH: usize = 64;

/// The output of `f` if it completes without waiting. The store's SQLite statements never
/// wait (they run synchronously), so a job's future completes on its first poll.
pub(super) fn run_ready<F: Future>(f: F) -> Option<F::Output> {
    let mut f = pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => Some(out),
        Poll::Pending => None,
    }
}

/// How a job's caller is answered, given the outcome of the commit.
type Answer = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// What a job reports to the thread: whether it succeeded (its savepoint is kept), and how
/// to answer its caller once the outcome of the commit is known.
struct Outcome {
    ok: bool,
    answer: Answer,
}

/// A caller's write, with the channel its answer goes back on.
trait Job: Send {
    /// Runs the write on `conn`, inside the transaction.
    fn run(self: Box<Self>, conn: &mut Connection) -> Outcome;
    /// Answers without running (the transaction could not begin).
    fn refuse(self: Box<Self>, error: StoreError);
}

struct Typed<T, F> {
    job: F,
    answer: oneshot::Sender<Result<T, StoreError>>,
    _output: PhantomData<fn() -> T>,
}

impl<T, F> Job for Typed<T, F>
where
    T: Send + 'static,
    F: for<'c> FnOnce(&'c mut Connection) -> BoxFuture<'c, Result<T, StoreError>> + Send + 'static,
{
    fn run(self: Box<Self>, conn: &mut Connection) -> Outcome {
        let Typed { job, answer, .. } = *self;
        let out = match catch_unwind(AssertUnwindSafe(|| run_ready(job(conn)))) {
            Ok(Some(out)) => out,
            Ok(None) => Err(StoreError::Backend(
                "a store write waited for something other than the database; rolled back".into(),
            )),
            Err(_) => Err(StoreError::Backend(
                "a store write panicked; its changes were rolled back".into(),
            )),
        };
        Outcome {
            ok: out.is_ok(),
            answer: Box::new(move |committed| {
                // The caller may have gone away (cancelled): its write stands or falls with
                // the batch all the same.
                let _ = answer.send(committed.and(out));
            }),
        }
    }

    fn refuse(self: Box<Self>, error: StoreError) {
        let _ = self.answer.send(Err(error));
    }
}

enum Message {
    Job(Box<dyn Job>),
    Close(oneshot::Sender<()>),
}

/// The handle of the writer thread. Dropping the last handle stops the thread after the
/// writes already sent.
#[derive(Debug)]
pub(super) struct Writer {
    sender: mpsc::Sender<Message>,
}

fn closed() -> StoreError {
    StoreError::Backend("the SQLite store is closed".into())
}

impl Writer {
    /// Starts the thread that owns `conn`, telling `checkpoints` of each commit.
    pub(super) fn spawn(conn: Connection, checkpoints: Checkpointer) -> Result<Writer, StoreError> {
        let (sender, receiver) = mpsc::channel();
        std::thread::Builder::new()
            .name("vnfm-sqlite-writer".into())
            .spawn(move || serve(conn, checkpoints, receiver))
            .map_err(|e| StoreError::Backend(format!("starting the SQLite writer failed: {e}")))?;
        Ok(Writer { sender })
    }

    /// Runs `job` in a write transaction; answers once it is committed.
    pub(super) async fn write<T, F>(&self, job: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: for<'c> FnOnce(&'c mut Connection) -> BoxFuture<'c, Result<T, StoreError>>
            + Send
            + 'static,
    {
        let (answer, answered) = oneshot::channel();
        let job = Box::new(Typed {
            job,
            answer,
            _output: PhantomData,
        });
        self.sender.send(Message::Job(job)).map_err(|_| closed())?;
        answered.await.map_err(|_| closed())?
    }

    /// Commits what was sent before, then closes the connection (checkpointing the WAL).
    pub(super) async fn close(&self) {
        let (done, closed) = oneshot::channel();
        if self.sender.send(Message::Close(done)).is_ok() {
            let _ = closed.await;
        }
    }
}

/// The thread's loop: one batch per turn. The checkpointer's connection is closed before this
/// one, so that closing this last connection checkpoints the WAL and removes it.
fn serve(mut conn: Connection, checkpoints: Checkpointer, receiver: mpsc::Receiver<Message>) {
    while let Ok(message) = receiver.recv() {
        let first = match message {
            Message::Job(job) => job,
            Message::Close(done) => {
                drop(checkpoints);
                drop(conn);
                let _ = done.send(());
                return;
            }
        };
        if let Err(e) = control(&conn, "BEGIN IMMEDIATE") {
            first.refuse(StoreError::from(db_error(e)));
            continue;
        }
        let mut waiting: Vec<Answer> = Vec::new();
        let mut close = None;
        let mut next = Some(first);
        while let Some(job) = next.take() {
            if let Some(answer) = run_in_savepoint(&mut conn, job) {
                waiting.push(answer);
            }
            if conn.is_autocommit() {
                // SQLite rolled the whole transaction back (I/O error, disk full): nothing of
                // the batch so far is written.
                for answer in waiting.drain(..) {
                    answer(Err(StoreError::Backend(
                        "the database rolled the transaction back".into(),
                    )));
                }
                if let Err(e) = control(&conn, "BEGIN IMMEDIATE") {
                    let message = db_error(e).message;
                    while let Ok(Message::Job(job)) = receiver.try_recv() {
                        job.refuse(StoreError::Backend(message.clone()));
                    }
                    break;
                }
            }
            if waiting.len() >= MAX_BATCH {
                break;
            }
            match receiver.try_recv() {
                Ok(Message::Job(job)) => next = Some(job),
                Ok(Message::Close(done)) => close = Some(done),
                Err(_) => {}
            }
        }
        let committed = if conn.is_autocommit() {
            Ok(())
        } else {
            control(&conn, "COMMIT").map_err(|e| db_error(e).message)
        };
        if committed.is_err() && !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
        } else if committed.is_ok() {
            checkpoints.committed();
        }
        for answer in waiting {
            answer(
                committed
                    .as_ref()
                    .map(|_| ())
                    .map_err(|m| StoreError::Backend(m.clone())),
            );
        }
        if let Some(done) = close {
            drop(checkpoints);
            drop(conn);
            let _ = done.send(());
            return;
        }
    }
    drop(checkpoints);
}

/// Runs the transaction-control statement `sql` (BEGIN, SAVEPOINT, RELEASE, COMMIT) from the
/// connection's prepared statements: every write runs four of them, which `execute_batch`
/// would parse and compile again each time.
fn control(conn: &Connection, sql: &'static str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Runs one job inside a savepoint: `Some(answer)` to call after the commit when it
/// succeeded; a failed job is rolled back to its savepoint and answered at once.
fn run_in_savepoint(conn: &mut Connection, job: Box<dyn Job>) -> Option<Answer> {
    if let Err(e) = control(conn, "SAVEPOINT store_call") {
        job.refuse(StoreError::from(db_error(e)));
        return None;
    }
    let outcome = job.run(conn);
    if conn.is_autocommit() {
        (outcome.answer)(Err(StoreError::Backend(
            "the database rolled the transaction back".into(),
        )));
        return None;
    }
    if outcome.ok {
        match control(conn, "RELEASE store_call") {
            Ok(()) => Some(outcome.answer),
            Err(e) => {
                (outcome.answer)(Err(StoreError::from(db_error(e))));
                None
            }
        }
    } else {
        let undone = conn.execute_batch("ROLLBACK TO store_call; RELEASE store_call");
        if undone.is_err() {
            // Its changes cannot be taken out alone: drop the whole transaction, which the
            // caller's loop notices (and answers the batch so far with an error).
            let _ = conn.execute_batch("ROLLBACK");
        }
        (outcome.answer)(undone.map_err(|e| StoreError::from(db_error(e))));
        None
    }
}
