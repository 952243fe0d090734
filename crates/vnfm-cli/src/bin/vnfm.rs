//! `vnfm`: the command-line program: package commands, shell completion, and the entry to every other command. See the `vnfm_cli` library.
//!
//! A one-shot program, started once per package check, so it starts as little as it can:
//! its `main` is the C one, without Rust's runtime set-up, whose stack-overflow handler asks the
//! C library for the main thread's stack, which reads and parses `/proc/self/maps` (about a
//! tenth of a millisecond on every start). What that set-up does and `vnfm` still needs is done
//! here: `SIGPIPE` is ignored (a closed pipe is an error on write, which the commands tolerate,
//! not a silent death), and standard output is flushed before returning. Command-line arguments
//! are available as usual (the standard library reads them at load time on glibc). A stack
//! overflow ends the process with `SIGSEGV` instead of a message; the descriptor parser bounds
//! its own recursion, and is told the main thread's stack size for the same reason (asking the
//! C library for it reads `/proc/self/maps` too).
// Under `cargo test` the test harness brings its own `main`.
#![cfg_attr(not(test), no_main)]

#[cfg(not(test))]
use std::ffi::{c_char, c_int};
#[cfg(not(test))]
use std::io::Write;

/// A one-shot program: memory comes from a bump arena on huge pages (see `vnfm_cli::arena`).
#[global_allocator]
static ALLOCATOR: vnfm_cli::arena::OneShotArena = vnfm_cli::arena::OneShotArena::new();

/// The process entry, called by the C library's start-up code.
#[cfg(not(test))]
#[allow(unsafe_code)] // `no_mangle` exports the symbol the C start-up code calls.
#[unsafe(no_mangle)]
extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    vnfm_cli::ignore_sigpipe();
    vnfm_cli::declare_main_thread_stack();
    // A panic ends the program with status 101 after the panic message, as it does under
    // Rust's own `main`; it must not unwind into the C caller.
    let status = std::panic::catch_unwind(vnfm_cli::main_vnfm).unwrap_or(101);
    let _ = std::io::stdout().flush();
    c_int::from(status)
}
