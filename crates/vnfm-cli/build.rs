//! Links `vnfm` (the package commands and the hand-over to the other two programs) as a
//! fixed-address executable: a one-shot command then starts without the dynamic loader
//! relocating its 15,000 address constants. `vnfm-server` and `vnfm-client`, which talk to the
//! network, stay position-independent, with address-space layout randomisation.

fn main() {
    println!("cargo:rustc-link-arg-bin=vnfm=-no-pie");
}
