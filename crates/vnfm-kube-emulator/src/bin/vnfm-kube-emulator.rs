//! `vnfm-kube-emulator [ADDR:PORT] [TOKEN]`: runs the Kubernetes API emulation until stopped,
//! for demonstrations and manual tests on machines without a cluster. Prints the URL and the
//! bearer token it accepts.

use std::net::SocketAddr;
use std::process::ExitCode;

use vnfm_kube_emulator::{Emulator, EmulatorConfig};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let listen: SocketAddr = match args.next().as_deref().unwrap_or("127.0.0.1:0").parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("usage: vnfm-kube-emulator [ADDR:PORT] [TOKEN]: {e}");
            return ExitCode::from(2);
        }
    };
    let mut config = EmulatorConfig::default();
    if let Some(token) = args.next() {
        config.tokens = vec![token];
    }
    let emulator = match Emulator::start_on(listen, config).await {
        Ok(e) => e,
        Err(e) => {
            eprintln!("vnfm-kube-emulator: {e}");
            return ExitCode::from(1);
        }
    };
    println!("Kubernetes API emulation at {}", emulator.url());
    println!("bearer token: {}", emulator.token());
    let _ = tokio::signal::ctrl_c().await;
    emulator.stop();
    ExitCode::SUCCESS
}
