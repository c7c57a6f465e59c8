//! Where a run's lines go (`zs_systems::cli::output`): captures nest.

use zs_systems::cli::output::{captured, line};

/// Lines said inside a capture are collected, nested captures each their own, and nothing
/// leaks into the enclosing one.
#[test]
fn captures_nest_and_collect_their_own_lines() {
    let (((), inner), outer) = captured(|| {
        line(format_args!("outer {}", 1));
        let r = captured(|| line(format_args!("inner")));
        line(format_args!("outer {}", 2));
        r
    });
    assert_eq!(inner, "inner\n");
    assert_eq!(outer, "outer 1\nouter 2\n");
}
