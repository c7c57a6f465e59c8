//! `zs`: run the source papers' systems from the command line (see [`zs_systems::cli`]).

/// Large arrays on huge pages (`zs_runtime::memory`): a melt of 10⁵–10⁶ beads walks its
/// arrays with fewer TLB misses; `ZS_HUGE_PAGES=0` turns it off.
#[global_allocator]
static ALLOCATOR: zs_runtime::memory::HugePages = zs_runtime::memory::HugePages;

fn main() -> std::process::ExitCode {
    zs_runtime::memory::huge_pages_from_env();
    zs_systems::cli::main()
}
