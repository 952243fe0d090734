//! Where the reading helper thread runs.
//!
//! Linux queues a new thread on its parent's CPU, and an idle CPU pulls it over only at its
//! next load-balancing pass. On a virtual machine whose idle vCPUs halt, that is often after the
//! parent has done all the work alone (or the new thread runs first and the parent waits), so
//! two threads read one after the other. [`spread_from`] moves the helper off the parent's CPU
//! as soon as it runs, and the parent yields once after starting it so that it does run.

#![allow(unsafe_code)]

/// The CPU the calling thread runs on, when the system says.
#[cfg(target_os = "linux")]
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu takes no arguments and only reads the caller's CPU.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).ok()
}

/// Restricts the calling thread to the CPUs it may use other than `parent_cpu`, when it runs on
/// `parent_cpu` and another CPU is allowed. Best effort: failures leave it where it is.
#[cfg(target_os = "linux")]
pub(crate) fn spread_from(parent_cpu: usize) {
    if current_cpu() != Some(parent_cpu) || parent_cpu >= libc::CPU_SETSIZE as usize {
        return;
    }
    // SAFETY: a zeroed cpu_set_t is a valid empty set; the calls get its size and a pointer to
    // it, and CPU_ISSET/CPU_CLR index below CPU_SETSIZE.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        let size = std::mem::size_of::<libc::cpu_set_t>();
        if libc::sched_getaffinity(0, size, &mut set) != 0 || !libc::CPU_ISSET(parent_cpu, &set) {
            return;
        }
        libc::CPU_CLR(parent_cpu, &mut set);
        if libc::CPU_COUNT(&set) > 0 {
            libc::sched_setaffinity(0, size, &set);
        }
    }
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn current_cpu() -> Option<usize> {
    None
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn spread_from(_parent_cpu: usize) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn allowed() -> Vec<usize> {
        // SAFETY: as in `spread_from`.
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            assert_eq!(
                libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set),
                0
            );
            (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect()
        }
    }

    #[test]
    fn a_thread_on_the_parents_cpu_moves_off_it_and_others_stay() {
        // On a thread of its own, whose affinity ends with it.
        std::thread::spawn(|| {
            let before = allowed();
            let here = current_cpu().expect("sched_getcpu works on Linux");
            assert!(before.contains(&here));
            // Another CPU than the one it runs on: nothing changes.
            spread_from(here + 1);
            assert_eq!(allowed(), before);
            spread_from(here);
            if before.len() > 1 {
                let after = allowed();
                assert!(!after.contains(&here), "{here} still allowed: {after:?}");
                assert_eq!(after.len(), before.len() - 1);
                assert_ne!(current_cpu(), Some(here));
            } else {
                // The only CPU it may use stays allowed.
                assert_eq!(allowed(), before);
            }
        })
        .join()
        .unwrap();
    }
}
