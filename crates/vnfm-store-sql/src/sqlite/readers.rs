//! The SQLite read connections: opened on demand up to a bound, kept for reuse, each used by
//! one caller at a time on the caller's own thread (a read is a few prepared statements, far
//! shorter than handing it to another thread and back).

use std::ops::{Deref, DerefMut};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rusqlite::Connection;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::{ConnectionSetup, open_connection};
use vnfm_store::StoreError;

/// The pool of read connections of one store.
#[derive(Debug)]
pub(super) struct Readers {
    idle: Mutex<Vec<Connection>>,
    permits: Arc<Semaphore>,
    path: PathBuf,
    setup: ConnectionSetup,
}

impl Readers {
    /// At most `max` connections to `path`, opened with `setup`.
    pub(super) fn new(path: PathBuf, setup: ConnectionSetup, max: usize) -> Readers {
        Readers {
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(max.max(1))),
            path,
            setup,
        }
    }

    /// A connection, waiting while all are in use.
    pub(super) async fn get(self: &Arc<Self>) -> Result<ReadConn, StoreError> {
        let permit = self
            .permits
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| StoreError::Backend("the SQLite store is closed".into()))?;
        let idle = self.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let conn = match idle {
            Some(conn) => conn,
            None => open_connection(&self.path, &self.setup)?,
        };
        Ok(ReadConn {
            conn: Some(conn),
            readers: self.clone(),
            _permit: permit,
        })
    }

    /// Closes the idle connections and refuses new reads; connections in use close when
    /// their readers hand them back.
    pub(super) fn close(&self) {
        self.permits.close();
        drop(std::mem::take(
            &mut *self.idle.lock().unwrap_or_else(|e| e.into_inner()),
        ));
    }
}

/// A read connection, held exclusively and handed back when dropped.
pub struct ReadConn {
    conn: Option<Connection>,
    readers: Arc<Readers>,
    _permit: OwnedSemaphorePermit,
}

impl Deref for ReadConn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        self.conn.as_ref().expect("connection until dropped")
    }
}

impl DerefMut for ReadConn {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().expect("connection until dropped")
    }
}

impl Drop for ReadConn {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && !self.readers.permits.is_closed()
        {
            self.readers
                .idle
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(conn);
        }
    }
}
