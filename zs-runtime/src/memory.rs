//! Large arrays on huge pages: [`HugePages`], a global allocator for programs that simulate
//! 10⁵–10⁶ bodies.
//!
//! A melt of 864 000 beads holds its positions, velocities and gradient in 20.7 MB each, and
//! its neighbour list in more. On 4 KiB pages a pass that walks a pair list in spatial order
//! still touches hundreds of pages per cell plane, more than the first-level TLB holds, and the
//! bonds' and the list build's reads land on pages anywhere in the arrays. A 2 MiB page covers
//! 512 of them. Linux backs memory with huge pages ("transparent huge pages") either always or,
//! the default of most distributions (`madvise` in
//! `/sys/kernel/mm/transparent_hugepage/enabled`), only where a program asks with
//! `madvise(MADV_HUGEPAGE)`. [`HugePages`] asks for every allocation of [`HUGE_FROM`] bytes or
//! more: the 2 MiB-aligned pages inside it. Smaller allocations, and every allocation where the
//! kernel has no huge pages or on other systems, are `System`'s, untouched.
//!
//! The advice costs memory only where an array is touched within a huge page but not over all
//! of it (the spare capacity of a vector, at most one huge page an allocation): measured in
//! BENCHMARKS.md with the peak resident memory against LAMMPS's.
//!
//! The `zs` program installs it; a program of one's own does with
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: zs_runtime::memory::HugePages = zs_runtime::memory::HugePages;
//! ```
//!
//! and [`huge_pages_from_env`] lets `ZS_HUGE_PAGES=0` turn the advice off (to measure what it
//! is worth, in one binary).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Allocations of at least this many bytes are advised onto huge pages: a smaller one holds at
/// most one whole aligned huge page, and would mostly risk its spare capacity's memory.
pub const HUGE_FROM: usize = 4 << 20;

/// The size of a transparent huge page on x86-64 and AArch64 (4 KiB base pages).
const HUGE_PAGE: usize = 2 << 20;

/// Whether [`HugePages`] advises (on unless [`set_huge_pages`] turned it off).
static ADVISE: AtomicBool = AtomicBool::new(true);

/// Turns [`HugePages`]'s advice on or off for the allocations made from now on.
pub fn set_huge_pages(on: bool) {
    ADVISE.store(on, Ordering::Relaxed);
}

/// [`set_huge_pages`] from the environment: off when `ZS_HUGE_PAGES` is `0`; whether it is on.
/// Call it first thing in `main`, before the large arrays are made.
pub fn huge_pages_from_env() -> bool {
    let on = std::env::var_os("ZS_HUGE_PAGES").is_none_or(|v| v != "0");
    set_huge_pages(on);
    on
}

/// `System`, with the memory of every allocation of [`HUGE_FROM`] bytes or more advised onto
/// transparent huge pages (Linux; elsewhere `System` alone). See the [module docs](self).
#[derive(Debug, Clone, Copy, Default)]
pub struct HugePages;

/// Advises the 2 MiB-aligned pages inside `[ptr, ptr + size)` onto huge pages, when `size` is
/// at least [`HUGE_FROM`] and the advice is on.
fn advise(ptr: *mut u8, size: usize) {
    if ptr.is_null() || size < HUGE_FROM || !ADVISE.load(Ordering::Relaxed) {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + size) / HUGE_PAGE * HUGE_PAGE;
    if end > start {
        advise_range(start, end - start);
    }
}

#[cfg(target_os = "linux")]
fn advise_range(start: usize, len: usize) {
    // SAFETY: `[start, start + len)` lies inside one live allocation of ours (`advise`'s
    // caller has just obtained it from `System`), page-aligned as `madvise` requires.
    // `MADV_HUGEPAGE` changes no byte of memory and no mapping's protection or extent: it only
    // marks the range as one the kernel may back with huge pages (at a fault, or later by
    // khugepaged, copying contents unchanged). Its failure (a kernel without transparent huge
    // pages: `EINVAL`) leaves everything as it was, so the result is ignored.
    unsafe {
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_range(_: usize, _: usize) {}

// SAFETY: every method forwards its arguments unchanged to `System`, which upholds the
// `GlobalAlloc` contract, and returns `System`'s result; the only addition is `advise`, which
// neither allocates nor unwinds, and reads or writes no byte of the memory it is given
// (`advise_range`'s proof).
unsafe impl GlobalAlloc for HugePages {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded unchanged.
        let ptr = unsafe { System.alloc(layout) };
        advise(ptr, layout.size());
        ptr
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, forwarded unchanged.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        advise(ptr, layout.size());
        ptr
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout` (the
        // caller's contract, forwarded unchanged).
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        advise(new, new_size);
        new
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator, i.e. by `System`, with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// `THPeligible` of the mapping of `/proc/self/smaps` that holds `addr`: whether the
    /// kernel may back it with huge pages.
    fn eligible(addr: usize) -> Option<bool> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            if let Some((range, _)) = line.split_once(' ')
                && let Some((a, b)) = range.split_once('-')
                && let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
            {
                inside = (a..b).contains(&addr);
            } else if inside && let Some(v) = line.strip_prefix("THPeligible:") {
                return Some(v.trim() == "1");
            }
        }
        None
    }

    #[test]
    fn a_large_allocation_is_advised_onto_huge_pages_unless_the_advice_is_off() {
        let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .unwrap_or_default();
        if !mode.contains("[madvise]") {
            // `always` makes every mapping eligible and `never` none: the advice is seen only
            // where the kernel waits for it.
            eprintln!("transparent huge pages not `madvise` here ({mode:?}): nothing to see");
            return;
        }
        let large = Layout::from_size_align(3 * HUGE_FROM, 8).unwrap();
        // SAFETY: a non-zero size; freed below with the same layout.
        let ptr = unsafe { HugePages.alloc_zeroed(large) };
        assert!(!ptr.is_null());
        let inner = (ptr as usize).next_multiple_of(HUGE_PAGE);
        assert_eq!(eligible(inner), Some(true), "the advised pages");
        // SAFETY: `ptr` came from `HugePages.alloc_zeroed(large)`.
        unsafe { HugePages.dealloc(ptr, large) };

        // The same allocation with the advice off: `System`'s mapping, not eligible.
        set_huge_pages(false);
        // SAFETY: as above.
        let ptr = unsafe { HugePages.alloc_zeroed(large) };
        set_huge_pages(true);
        let inner = (ptr as usize).next_multiple_of(HUGE_PAGE);
        assert_eq!(eligible(inner), Some(false), "no advice, no huge pages");
        // SAFETY: as above.
        unsafe { HugePages.dealloc(ptr, large) };
    }
}
