//! The memory allocator of the one-shot `vnfm` program: a bump arena on transparent huge pages.
//!
//! A `vnfm package validate` lives a few milliseconds and allocates under 2 MB in all, most of
//! it live until the report is printed. Through glibc's `malloc` every fresh 4 KiB page of heap
//! is a page fault (1.2 to 1.5 µs each on the reference machine, about 180 of them per
//! validation), the reading thread gets an arena of its own that grows one `mprotect` at a
//! time, and `malloc`/`free` bookkeeping is several percent of the run. [`OneShotArena`] instead
//! reserves address space once, asks for transparent huge pages on it (one fault maps 2 MiB),
//! and hands out memory by bumping a pointer: each thread bumps a 64 KiB chunk of its own,
//! taken from the shared pointer (as are large blocks), so that the two reading threads do
//! not contend for one cache line on every allocation. Freeing gives back only the most
//! recent allocation of a chunk or of the arena (temporary buffers), so the arena is meant for
//! short-lived programs: once it is used up, or when it cannot be reserved or the machine has
//! transparent huge pages turned off, allocations go to the system allocator, so a long
//! multi-package run stays correct and bounded by the system allocator's behaviour.
//!
//! `vnfm-server` and `vnfm-client` keep the system allocator: they are long-lived.

#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Address space the arena reserves; pages are only faulted in as they are used.
const RESERVE: usize = 16 << 20;
/// Transparent huge page size on x86-64 and the arena's alignment.
const HUGE_PAGE: usize = 2 << 20;
/// Each thread bumps its own chunk of this size, so that two threads allocating at once do not
/// pass the shared pointer's cache line back and forth on every allocation.
const CHUNK: usize = 64 << 10;
/// Blocks larger than this come from the shared pointer directly.
const LARGE: usize = CHUNK / 4;

/// The chunk the current thread bumps, and the arena it belongs to (tests make several).
#[derive(Clone, Copy)]
struct Local {
    arena: usize,
    start: usize,
    next: usize,
    end: usize,
}

impl Local {
    const EMPTY: Local = Local {
        arena: 0,
        start: 0,
        next: 0,
        end: 0,
    };

    /// Takes a block for `layout` from the chunk.
    fn take(&mut self, layout: Layout) -> Option<usize> {
        let at = self.next.checked_add(layout.align() - 1)? & !(layout.align() - 1);
        let new = at.checked_add(layout.size())?;
        if at < self.start || new > self.end {
            return None;
        }
        self.next = new;
        Some(at)
    }
}

thread_local! {
    static LOCAL: std::cell::Cell<Local> = const { std::cell::Cell::new(Local::EMPTY) };
}

/// States of [`OneShotArena::start`] below any real address.
const UNSET: usize = 0;
const BUSY: usize = 1;
const FAILED: usize = 2;

/// A bump allocator over one reserved, huge-page-backed region, falling back to the system
/// allocator (see the module documentation). Use as `#[global_allocator]` of a short-lived
/// program only.
#[derive(Debug)]
pub struct OneShotArena {
    /// The arena's first address once reserved; [`UNSET`], [`BUSY`] or [`FAILED`] before.
    start: AtomicUsize,
    /// The next free address.
    next: AtomicUsize,
    /// Whether to stand aside when transparent huge pages are off (always, but in tests).
    needs_huge_pages: bool,
}

impl OneShotArena {
    /// An arena that reserves its memory on first use.
    pub const fn new() -> Self {
        OneShotArena {
            start: AtomicUsize::new(UNSET),
            next: AtomicUsize::new(0),
            needs_huge_pages: true,
        }
    }

    /// Bytes handed out from the arena so far (including alignment padding).
    pub fn used(&self) -> usize {
        let start = self.start.load(Ordering::Acquire);
        if start > FAILED {
            self.next.load(Ordering::Relaxed) - start
        } else {
            0
        }
    }

    /// The arena's bounds, reserving it on first use; `None` while another thread reserves it
    /// or when it could not be reserved (the caller then uses the system allocator).
    fn bounds(&self) -> Option<(usize, usize)> {
        let start = self.start.load(Ordering::Acquire);
        if start > FAILED {
            return Some((start, start + RESERVE));
        }
        if start != UNSET
            || self
                .start
                .compare_exchange(UNSET, BUSY, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
        {
            return None;
        }
        match reserve(self.needs_huge_pages) {
            Some(base) => {
                self.next.store(base, Ordering::Relaxed);
                self.start.store(base, Ordering::Release);
                Some((base, base + RESERVE))
            }
            None => {
                self.start.store(FAILED, Ordering::Release);
                None
            }
        }
    }

    /// True when `ptr` was handed out by the arena.
    fn owns(&self, ptr: *mut u8) -> bool {
        let start = self.start.load(Ordering::Acquire);
        let p = ptr as usize;
        start > FAILED && p >= start && p < start + RESERVE
    }

    /// Runs `f` on this thread's chunk of this arena (an empty one at first, or after another
    /// arena's use); `None` during thread teardown.
    fn with_local<T>(&self, f: impl FnOnce(&mut Local) -> T) -> Option<T> {
        let me = self as *const OneShotArena as usize;
        LOCAL
            .try_with(|cell| {
                let mut local = cell.get();
                if local.arena != me {
                    local = Local {
                        arena: me,
                        ..Local::EMPTY
                    };
                }
                let out = f(&mut local);
                cell.set(local);
                out
            })
            .ok()
    }

    /// A block from this thread's chunk, taking a fresh chunk when it is used up; large blocks
    /// from the shared pointer.
    fn take(&self, layout: Layout) -> Option<*mut u8> {
        if layout.size() <= LARGE
            && let Some(Some(at)) = self.with_local(|local| {
                local.take(layout).or_else(|| {
                    let chunk = self.bump(Layout::from_size_align(CHUNK, 16).ok()?)? as usize;
                    *local = Local {
                        arena: local.arena,
                        start: chunk,
                        next: chunk,
                        end: chunk + CHUNK,
                    };
                    local.take(layout)
                })
            })
        {
            return Some(at as *mut u8);
        }
        self.bump(layout)
    }

    /// A block from the shared pointer.
    fn bump(&self, layout: Layout) -> Option<*mut u8> {
        let (_, end) = self.bounds()?;
        let mut cur = self.next.load(Ordering::Relaxed);
        loop {
            let at = cur.checked_add(layout.align() - 1)? & !(layout.align() - 1);
            let new = at.checked_add(layout.size())?;
            if new > end {
                return None;
            }
            match self
                .next
                .compare_exchange_weak(cur, new, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(at as *mut u8),
                Err(actual) => cur = actual,
            }
        }
    }
}

impl Default for OneShotArena {
    fn default() -> Self {
        Self::new()
    }
}

/// Where Linux says whether transparent huge pages may be used.
const THP_SETTING: &str = "/sys/kernel/mm/transparent_hugepage/enabled";

/// Maps [`RESERVE`] bytes aligned to [`HUGE_PAGE`] and asks for transparent huge pages on them.
/// `None`, when `needs_huge_pages`, if the machine's setting is `never` or its kernel has no
/// transparent huge pages: on 4 KiB pages the arena, which never reuses freed memory, faults in
/// more pages than the system allocator and was measured slower than it.
fn reserve(needs_huge_pages: bool) -> Option<usize> {
    if needs_huge_pages {
        // Read into a buffer on the stack: this runs inside the allocator.
        let mut buf = [0u8; 64];
        let setting = std::fs::File::open(THP_SETTING)
            .and_then(|mut f| std::io::Read::read(&mut f, &mut buf))
            .map(|n| String::from_utf8_lossy(&buf[..n]).contains("[never]"));
        if setting.is_ok_and(|never| never) {
            return None;
        }
    }
    let len = RESERVE + HUGE_PAGE;
    // SAFETY: an anonymous private mapping at an address the kernel chooses touches no existing
    // memory; the result is checked.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return None;
    }
    let base = (raw as usize).checked_add(HUGE_PAGE - 1)? & !(HUGE_PAGE - 1);
    // SAFETY: the range lies inside the mapping just made.
    let advised = unsafe { libc::madvise(base as *mut libc::c_void, RESERVE, libc::MADV_HUGEPAGE) };
    if advised != 0 && needs_huge_pages {
        // A kernel without transparent huge pages: give the mapping back.
        // SAFETY: the whole mapping made above, not yet handed out.
        unsafe { libc::munmap(raw, len) };
        return None;
    }
    Some(base)
}

// SAFETY: every block handed out lies inside the reserved mapping, is aligned as asked and is
// handed out once (the bump pointer only moves back over the most recent block when that block
// is freed or resized); blocks the arena does not own go to the system allocator they came from.
unsafe impl GlobalAlloc for OneShotArena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match self.take(layout) {
            Some(p) => p,
            // SAFETY: the caller's layout contract is passed on unchanged.
            None => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if self.owns(ptr) {
            // Only the most recent block of this thread's chunk, or of the whole arena, can be
            // given back; anything else stays until exit.
            let (p, end) = (ptr as usize, ptr as usize + layout.size());
            let local = self.with_local(|local| {
                let top = p >= local.start && end == local.next;
                if top {
                    local.next = p;
                }
                top
            });
            if local != Some(true) {
                let _ = self
                    .next
                    .compare_exchange(end, p, Ordering::Relaxed, Ordering::Relaxed);
            }
            return;
        }
        // SAFETY: not the arena's, so the system allocator handed it out with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if !self.owns(ptr) {
            // SAFETY: the system allocator handed it out with this layout.
            return unsafe { System.realloc(ptr, layout, new_size) };
        }
        let start = self.start.load(Ordering::Acquire);
        let p = ptr as usize;
        // The most recent block of this thread's chunk, or of the whole arena, grows or shrinks
        // where it is.
        let in_chunk = self.with_local(|local| {
            let fits = p >= local.start
                && p + layout.size() == local.next
                && p.checked_add(new_size).is_some_and(|e| e <= local.end);
            if fits {
                local.next = p + new_size;
            }
            fits
        });
        if in_chunk == Some(true) {
            return ptr;
        }
        if let Some(new_end) = p.checked_add(new_size)
            && new_end <= start + RESERVE
            && self
                .next
                .compare_exchange(
                    p + layout.size(),
                    new_end,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_ok()
        {
            return ptr;
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: `new_size` is non-zero and, per the caller's contract, does not overflow
        // `isize` when rounded up to `layout.align()`.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: as for `alloc`.
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            // SAFETY: both blocks are valid for `layout.size()` bytes and distinct.
            unsafe {
                std::ptr::copy_nonoverlapping(ptr, new, layout.size());
                self.dealloc(ptr, layout);
            }
        }
        new
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout(size: usize, align: usize) -> Layout {
        Layout::from_size_align(size, align).unwrap()
    }

    #[test]
    fn blocks_are_aligned_distinct_and_from_the_arena() {
        let a = arena();
        let mut blocks = Vec::new();
        for (size, align) in [(1, 1), (24, 8), (100, 16), (4096, 4096), (3, 2), (64, 64)] {
            let l = layout(size, align);
            let p = unsafe { a.alloc(l) };
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0, "alignment {align}");
            assert!(a.owns(p));
            unsafe { p.write_bytes(0xab, size) };
            blocks.push((p as usize, size));
        }
        blocks.sort();
        for w in blocks.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "blocks overlap: {w:?}");
        }
    }

    #[test]
    fn the_most_recent_block_is_given_back_and_resized_in_place() {
        let a = arena();
        let first = unsafe { a.alloc(layout(16, 8)) };
        let second = unsafe { a.alloc(layout(32, 8)) };
        unsafe { a.dealloc(second, layout(32, 8)) };
        let again = unsafe { a.alloc(layout(32, 8)) };
        assert_eq!(again, second, "the top block is given back");
        // An older block is not given back (the bump pointer cannot skip over live blocks).
        unsafe { a.dealloc(first, layout(16, 8)) };
        let third = unsafe { a.alloc(layout(8, 8)) };
        assert_ne!(third, first);
        assert!(third as usize > again as usize);
        // The top block grows where it is, keeping its bytes.
        unsafe { third.write_bytes(7, 8) };
        let grown = unsafe { a.realloc(third, layout(8, 8), 4000) };
        assert_eq!(grown, third);
        assert_eq!(unsafe { *grown.add(7) }, 7);
        // A block below the top moves, with its bytes.
        let below = unsafe { a.alloc(layout(8, 8)) };
        unsafe { below.write_bytes(9, 8) };
        let _top = unsafe { a.alloc(layout(8, 8)) };
        let moved = unsafe { a.realloc(below, layout(8, 8), 64) };
        assert_ne!(moved, below);
        assert_eq!(unsafe { std::slice::from_raw_parts(moved, 8) }, &[9u8; 8]);
    }

    #[test]
    fn a_full_arena_hands_over_to_the_system_allocator() {
        let a = arena();
        let big = layout(RESERVE - 64, 8);
        let p = unsafe { a.alloc(big) };
        assert!(a.owns(p));
        let q = unsafe { a.alloc(layout(4096, 8)) };
        assert!(!q.is_null());
        assert!(
            !a.owns(q),
            "a block past the arena comes from the system allocator"
        );
        unsafe { q.write_bytes(1, 4096) };
        // Growing an arena block past the end moves it to the system allocator.
        let r = unsafe { a.realloc(p, big, RESERVE + 1) };
        assert!(!r.is_null() && !a.owns(r));
        unsafe {
            a.dealloc(q, layout(4096, 8));
            a.dealloc(r, layout(RESERVE + 1, 8));
        }
    }

    /// An arena that works on whatever pages the machine has, so that these tests do not
    /// depend on its huge-page setting.
    const fn arena() -> OneShotArena {
        OneShotArena {
            needs_huge_pages: false,
            ..OneShotArena::new()
        }
    }

    #[test]
    fn the_arena_stands_aside_when_huge_pages_are_off() {
        let setting = std::fs::read_to_string(THP_SETTING).unwrap_or_default();
        let a = OneShotArena::new();
        let p = unsafe { a.alloc(layout(8, 8)) };
        assert!(!p.is_null());
        assert_eq!(
            a.owns(p),
            !setting.contains("[never]"),
            "setting: {setting}"
        );
    }

    #[test]
    fn blocks_freed_on_another_thread_are_never_handed_out_twice() {
        static ARENA: OneShotArena = arena();
        let size = |i: usize| 8 + (i * 13) % 300;
        // This thread allocates; another frees every other block, the most recent ones among
        // them; then both allocate again. No live block may overlap another.
        let mine: Vec<(usize, usize)> = (0..500)
            .map(|i| (unsafe { ARENA.alloc(layout(size(i), 8)) } as usize, size(i)))
            .collect();
        let (kept, freed): (Vec<_>, Vec<_>) =
            mine.iter().enumerate().partition(|(i, _)| i % 2 == 0);
        // And this thread frees a recent block below the top of its chunk.
        let mut kept = kept;
        let (_, &(below_top, below_top_size)) = kept.remove(kept.len() - 2);
        unsafe { ARENA.dealloc(below_top as *mut u8, layout(below_top_size, 8)) };
        let theirs = std::thread::scope(|s| {
            s.spawn(|| {
                for &(_, &(p, n)) in freed.iter().rev() {
                    unsafe { ARENA.dealloc(p as *mut u8, layout(n, 8)) };
                }
                (0..500)
                    .map(|i| (unsafe { ARENA.alloc(layout(size(i), 8)) } as usize, size(i)))
                    .collect::<Vec<_>>()
            })
            .join()
            .unwrap()
        });
        let more: Vec<(usize, usize)> = (0..500)
            .map(|i| (unsafe { ARENA.alloc(layout(size(i), 8)) } as usize, size(i)))
            .collect();
        let mut live: Vec<(usize, usize)> = kept.iter().map(|&(_, &b)| b).collect();
        live.extend(theirs);
        live.extend(more);
        live.sort();
        for w in live.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "blocks overlap: {w:?}");
        }
    }

    #[test]
    fn threads_get_disjoint_blocks() {
        static ARENA: OneShotArena = arena();
        let blocks: Vec<Vec<(usize, usize)>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|t| {
                    s.spawn(move || {
                        (0..2000)
                            .map(|i| {
                                let size = 8 + (i * 7 + t) % 200;
                                let p = unsafe { ARENA.alloc(layout(size, 8)) };
                                unsafe { p.write_bytes(t as u8, size) };
                                (p as usize, size)
                            })
                            .collect()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<(usize, usize)> = blocks.into_iter().flatten().collect();
        all.sort();
        for w in all.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "blocks overlap: {w:?}");
        }
    }
}
