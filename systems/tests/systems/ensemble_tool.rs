//! `zs_systems::ensemble::replicas`: independent replicas on a pool, results in seed order.

/// Results keep the seeds' order and do not depend on the thread count.
#[test]
fn replicas_come_back_in_seed_order_on_any_pool() {
    let work = |seed: u64| -> f64 {
        let mut x = seed as f64 + 0.5;
        for _ in 0..10_000 {
            x = (x * 1.000_001).sin() + seed as f64;
        }
        x
    };
    let seeds: Vec<u64> = (0..16).rev().collect();
    let on = |threads| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| zs_systems::ensemble::replicas(&seeds, work))
    };
    let one = on(1);
    assert_eq!(one, seeds.iter().map(|&s| work(s)).collect::<Vec<_>>());
    assert_eq!(one, on(3));
}
