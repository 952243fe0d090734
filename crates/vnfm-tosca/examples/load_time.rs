//! Measures how long `vnfm_tosca::load` takes on an unpacked package directory.
//!
//! ```text
//! cargo run --release -p vnfm-tosca --example load_time -- <package dir> [iterations]
//! ```
//!
//! Prints the time of a cold load (empty parse cache) and the minimum and median of warm loads
//! (the ETSI type files and the package's own files already parsed), plus the diagnostics of
//! the last load.

use std::time::{Duration, Instant};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .ok_or("usage: load_time <package dir> [iterations]")?;
    let iterations: usize = args.next().map(|n| n.parse()).transpose()?.unwrap_or(200);
    let package = vnfm_csar::Package::open(std::path::Path::new(&dir))?;

    let mut cold = Vec::new();
    for _ in 0..5 {
        vnfm_tosca::clear_cache();
        let t = Instant::now();
        let _ = vnfm_tosca::load(&package);
        cold.push(t.elapsed());
    }
    let mut warm = Vec::with_capacity(iterations);
    let mut last = None;
    for _ in 0..iterations {
        let t = Instant::now();
        let loaded = vnfm_tosca::load(&package);
        warm.push(t.elapsed());
        last = Some(loaded);
    }
    cold.sort();
    warm.sort();
    let median = |v: &[Duration]| v[v.len() / 2];
    println!("{dir}");
    println!(
        "  cold load (empty cache): min {:?}, median {:?}",
        cold[0],
        median(&cold)
    );
    println!(
        "  warm load ({iterations} runs): min {:?}, median {:?}",
        warm[0],
        median(&warm)
    );
    if let Some(loaded) = last {
        let errors = loaded.diagnostics.iter().filter(|d| d.is_error()).count();
        println!(
            "  descriptor: {}, {} diagnostics ({errors} errors)",
            loaded.descriptor.is_some(),
            loaded.diagnostics.len()
        );
    }
    Ok(())
}
