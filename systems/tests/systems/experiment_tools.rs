//! The experiments' tools (`zs_systems::experiments`): CSV and tables, log-log slopes, whole
//! steps, interleaved timing.

use std::time::Duration;

use zs_systems::experiments::*;

#[test]
fn csv_quotes_text_and_round_trips_numbers() {
    let mut c = Csv::new(&["method", "x"]);
    c.push(&[Field::Text("Z&S, β=0.4"), Field::Num(0.1 + 0.2)]);
    c.push(&[Field::Text("a\"b"), Field::Int(-3)]);
    assert_eq!(c.rows(), 2);
    assert_eq!(
        c.as_str(),
        "method,x\n\"Z&S, β=0.4\",0.30000000000000004\n\"a\"\"b\",-3\n"
    );
}

#[test]
#[should_panic(expected = "row length")]
fn csv_rejects_short_rows() {
    Csv::new(&["a", "b"]).push(&[Field::Num(1.0)]);
}

#[test]
fn table_aligns_and_finds_cells() {
    let mut t = Table::new("T", &["method", "error"]);
    t.push(vec!["Z&S".into(), "1.00e-3".into()]);
    t.push(vec!["Newmark".into(), "2".into()]);
    let s = t.to_string();
    let lines: Vec<&str> = s.lines().collect();
    assert_eq!(lines.len(), 5);
    // Right-aligned numbers end in the same column.
    assert_eq!(lines[3].chars().count(), lines[4].chars().count());
    assert_eq!(t.cell("Newmark", "error"), Some("2"));
    assert_eq!(t.cell("SHAKE", "error"), None);
    assert!(t
        .to_markdown()
        .starts_with("| method | error |\n|---|---|\n"));
}

#[test]
fn slope_of_a_power_law_is_its_exponent() {
    let pts: Vec<(f64, f64)> = [0.1, 0.05, 0.025, 0.0125]
        .iter()
        .map(|&h| (h, 3.0 * h * h))
        .collect();
    assert!((log_log_slope(&pts).unwrap() - 2.0).abs() < 1e-12);
    assert_eq!(log_log_slope(&[(1.0, 0.0)]), None);
}

#[test]
fn whole_steps_accepts_rounding_and_rejects_fractions() {
    assert_eq!(whole_steps(50.0, 0.1), 500);
    assert_eq!(whole_steps(50.0, 0.1 / 20.0), 10_000);
    assert!(std::panic::catch_unwind(|| whole_steps(1.0, 0.3)).is_err());
}

#[test]
fn interleaved_timing_orders_cheap_and_expensive_work() {
    let work = |n: u64| {
        let mut x = 0u64;
        for i in 0..n {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(i);
        }
        std::hint::black_box(x);
    };
    let (mut cheap, mut dear) = (|| work(1_000), || work(100_000));
    let t = min_wall_times(&mut [&mut cheap, &mut dear], 3, Duration::from_millis(2));
    assert_eq!(t.len(), 2);
    assert!(t[1] > 10 * t[0], "{t:?}");
}

#[test]
fn min_wall_time_is_per_call() {
    let mut calls = 0u64;
    let t = min_wall_time(
        || {
            calls += 1;
            std::hint::black_box(calls);
        },
        3,
        Duration::from_millis(2),
    );
    assert!(calls > 3);
    assert!(t < Duration::from_millis(1), "{t:?}");
}
