//! What the API benchmarks share: sizes from the environment, percentiles, a package zipped
//! from a sample directory.

#![allow(dead_code)]

use std::time::Duration;

/// The number in environment variable `name`, else `default`.
pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The `p` quantile (0 to 1) of `sorted`, zero when it is empty.
pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// The directory `dir` as a zip archive (a package to upload).
pub fn zip_dir(dir: &std::path::Path) -> Vec<u8> {
    use std::io::Write;
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("sample dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = p
                    .strip_prefix(dir)
                    .expect("prefix")
                    .to_string_lossy()
                    .replace('\\', "/");
                zip.start_file(name, zip::write::SimpleFileOptions::default())
                    .expect("zip");
                zip.write_all(&std::fs::read(&p).expect("read"))
                    .expect("zip");
            }
        }
    }
    zip.finish().expect("zip").into_inner()
}
