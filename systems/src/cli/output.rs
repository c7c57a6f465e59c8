//! Where a run's lines go: stdout, or — for a replica running beside others (`zs ensemble`) —
//! a buffer of its own, printed whole when the replica ends, so that replicas side by side do
//! not interleave their lines. Written with `say!` where a run would
//! `println!`.
//!
//! The buffer is the calling thread's. A replica's lines are all written by the thread that
//! runs it: rayon may run another replica on that thread while the first waits inside a join,
//! but the second runs to its end there, nested, so buffers are taken and given back in stack
//! order ([`captured`]).

use std::cell::RefCell;
use std::fmt::Write as _;

thread_local! {
    static SINK: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// One line, to the current replica's buffer or to stdout.
pub fn line(args: std::fmt::Arguments<'_>) {
    let written = SINK.with(|sink| match sink.borrow_mut().as_mut() {
        Some(buf) => {
            let _ = writeln!(buf, "{args}");
            true
        }
        None => false,
    });
    if !written {
        use std::io::Write as _;
        // A reader that stops early (`| head`) closes the pipe: the run goes on, unread.
        let _ = writeln!(std::io::stdout().lock(), "{args}");
    }
}

/// `f()` with its lines collected instead of printed: its result and its lines.
pub fn captured<R>(f: impl FnOnce() -> R) -> (R, String) {
    let outer = SINK.with(|sink| sink.replace(Some(String::new())));
    let r = f();
    let text = SINK.with(|sink| sink.replace(outer)).unwrap_or_default();
    (r, text)
}
