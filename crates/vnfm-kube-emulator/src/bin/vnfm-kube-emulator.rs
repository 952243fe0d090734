//! `vnfm-kube-emulator [ADDR:PORT] [TOKEN] [CERT.pem KEY.pem]`: runs the Kubernetes API
//! emulation until stopped, for demonstrations and manual tests on machines without a
//! cluster; with a certificate chain and key it serves HTTPS. Prints the URL and the bearer
//! token it accepts.

use std::net::SocketAddr;
use std::process::ExitCode;

use vnfm_kube_emulator::{Emulator, EmulatorConfig, TlsIdentity};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let listen: SocketAddr = match args.next().as_deref().unwrap_or("127.0.0.1:0").parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("usage: vnfm-kube-emulator [ADDR:PORT] [TOKEN] [CERT.pem KEY.pem]: {e}");
            return ExitCode::from(2);
        }
    };
    let mut config = EmulatorConfig::default();
    if let Some(token) = args.next() {
        config.tokens = vec![token];
    }
    let started = match (args.next(), args.next()) {
        (Some(cert), Some(key)) => {
            let read = |p: &str| std::fs::read_to_string(p).map_err(|e| format!("{p}: {e}"));
            let identity = match (read(&cert), read(&key)) {
                (Ok(cert_chain_pem), Ok(key_pem)) => TlsIdentity {
                    cert_chain_pem,
                    key_pem,
                },
                (Err(e), _) | (_, Err(e)) => {
                    eprintln!("vnfm-kube-emulator: {e}");
                    return ExitCode::from(2);
                }
            };
            Emulator::start_tls(listen, config, &identity).await
        }
        _ => Emulator::start_on(listen, config).await,
    };
    let emulator = match started {
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
