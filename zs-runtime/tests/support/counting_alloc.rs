//! A counting global allocator for the "steps allocate nothing after set-up" tests.
//!
//! Counting is **per thread**: the test harness runs other threads (its main thread, other
//! tests) that may allocate while a measured window is open, and a process-wide counter would
//! see them. Include it in a test binary with
//! `#[path = "support/counting_alloc.rs"] mod counting_alloc;` — it installs itself as that
//! binary's `#[global_allocator]`.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

/// Every thread's allocations (for windows in which worker threads run, e.g. rayon's: use it in
/// a test binary with a single test, so that no other test allocates meanwhile).
static ALL_THREADS: AtomicUsize = AtomicUsize::new(0);

/// `System`, counting the calls that obtain memory (`alloc`, `alloc_zeroed`, `realloc`) made
/// by the current thread.
pub struct Counting;

fn bump() {
    // `try_with`: during thread teardown the slot may be gone; such allocations are not
    // inside any measured window.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
    ALL_THREADS.fetch_add(1, Ordering::Relaxed);
}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract; the only addition is an increment of a `const`-initialized
// thread-local `Cell<usize>` (no destructor, no lazy initialization) and of a static atomic,
// which neither allocate nor touch the memory being managed, so each method's requirements are
// exactly `System`'s.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: same contract as the caller's (forwarded unchanged).
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: same contract as the caller's (forwarded unchanged).
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`
        // (caller's contract, forwarded unchanged).
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made by the current thread while `f` runs.
pub fn allocations_during(f: impl FnOnce()) -> usize {
    let before = ALLOCATIONS.with(Cell::get);
    f();
    ALLOCATIONS.with(Cell::get) - before
}

/// Allocations made by every thread of the process while `f` runs.
#[allow(dead_code)]
pub fn allocations_in_all_threads_during(f: impl FnOnce()) -> usize {
    let before = ALL_THREADS.load(Ordering::SeqCst);
    f();
    ALL_THREADS.load(Ordering::SeqCst) - before
}
