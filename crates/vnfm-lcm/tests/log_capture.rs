//! The log capture of the test program: one global subscriber at TRACE level, so that every
//! test's logs are in it (a scoped subscriber misses events whose callsites another test thread
//! registered first). Tests look for their own messages and secrets in it.

use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

/// A tracing writer that keeps everything in memory.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Everything logged so far by any test of the program; the first call installs the capture.
pub fn logs() -> String {
    static LOGS: OnceLock<Captured> = OnceLock::new();
    let captured = LOGS.get_or_init(|| {
        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("first subscriber");
        captured
    });
    String::from_utf8_lossy(&captured.0.lock().unwrap()).into_owned()
}
