//! Link options of the `vnfm` program (the package commands and the hand-over to the other two
//! programs), which runs as a one-shot command:
//!
//! - a fixed-address executable: it starts without the dynamic loader relocating its 15,000
//!   address constants. `vnfm-server` and `vnfm-client`, which talk to the network, stay
//!   position-independent, with address-space layout randomisation;
//! - the functions a package validation runs laid out side by side (`vnfm.order`, written by
//!   `scripts/symbol-order.py`), so that it faults in a third of the program text instead of
//!   most of it. Names the list has and the program lacks are skipped.

fn main() {
    println!("cargo:rustc-link-arg-bin=vnfm=-no-pie");
    let order = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("vnfm.order");
    println!("cargo:rerun-if-changed={}", order.display());
    println!(
        "cargo:rustc-link-arg-bin=vnfm=-Wl,--symbol-ordering-file={}",
        order.display()
    );
    println!("cargo:rustc-link-arg-bin=vnfm=-Wl,--no-warn-symbol-ordering");
}
