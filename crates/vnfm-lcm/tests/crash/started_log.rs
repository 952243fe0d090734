//! The log of the occurrences a worker started: a directory with one file per worker
//! lifetime, one `<id>\n` record per started occurrence.
//!
//! A record is handed to the kernel in one `write(2)` on a file opened for appending, so a
//! SIGKILL lands before or after it, and a later lifetime never appends to a file an earlier
//! one may have cut short. The one thing a kill can still leave (a write cut at a page
//! boundary) is a last record without its newline: [`read`] reports that as torn.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The file of worker lifetime `n` in `dir`.
pub fn lifetime_file(dir: &Path, n: usize) -> PathBuf {
    dir.join(format!("lifetime-{n:04}.log"))
}

/// Appends the record of `id` as one write.
pub fn append(out: &mut impl Write, id: &str) -> std::io::Result<()> {
    // `writeln!` would issue the id and the newline as two writes.
    out.write_all(format!("{id}\n").as_bytes())
}

/// What the log holds.
#[derive(Debug, Default, PartialEq)]
pub struct Started {
    /// Ids of complete records, in order.
    pub complete: Vec<String>,
    /// Last records cut off by a kill: (file, the bytes that made it).
    pub torn: Vec<(PathBuf, String)>,
}

fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// Reads every lifetime's file in `dir`. A record that is not an id and is not the cut
/// off tail of its file means the log itself is broken: that panics, naming the file.
pub fn read(dir: &Path) -> Started {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("log entry").path())
        .collect();
    files.sort();
    let mut out = Started::default();
    for file in files {
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let mut records: Vec<&str> = text.split('\n').collect();
        // After the last newline: empty, or a record the kill cut off.
        let tail = records.pop().unwrap_or_default();
        for record in records {
            assert!(
                is_uuid(record),
                "{}: record {record:?} is not an operation occurrence id",
                file.display()
            );
            out.complete.push(record.to_string());
        }
        if !tail.is_empty() {
            out.torn.push((file, tail.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "ba52057e-2861-47d8-85c5-0248c9dd09e2";
    const B: &str = "394ca1a1-4370-4394-b3a7-43ab91600c47";

    /// Counts the writes it is given.
    struct Writes(Vec<Vec<u8>>);

    impl Write for Writes {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.push(buf.to_vec());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_record_is_one_write() {
        let mut w = Writes(Vec::new());
        append(&mut w, A).unwrap();
        assert_eq!(w.0, vec![format!("{A}\n").into_bytes()]);
    }

    #[test]
    fn a_torn_last_record_is_reported_as_torn_not_as_an_id() {
        let dir = tempfile::tempdir().unwrap();
        // Lifetime 0 was killed inside its second record; lifetime 1 wrote whole records.
        std::fs::write(lifetime_file(dir.path(), 0), format!("{A}\n{}", &B[..20])).unwrap();
        std::fs::write(lifetime_file(dir.path(), 1), format!("{B}\n")).unwrap();
        let got = read(dir.path());
        assert_eq!(got.complete, vec![A.to_string(), B.to_string()]);
        assert_eq!(
            got.torn,
            vec![(lifetime_file(dir.path(), 0), B[..20].to_string())]
        );
    }

    #[test]
    #[should_panic(expected = "is not an operation occurrence id")]
    fn a_glued_record_inside_a_file_is_a_broken_log() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(lifetime_file(dir.path(), 0), format!("{A}{B}\n")).unwrap();
        read(dir.path());
    }
}
