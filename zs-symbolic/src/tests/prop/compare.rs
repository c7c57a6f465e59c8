//! The comparison: the engine against the reference, relative to `S`.

use super::*;

/// Worst `|engine − reference| / S` seen, per kind of output (`scale_jet`: `Cond`'s own
/// jet against num-dual, a check of the scale's arithmetic).
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct Worst {
    pub(super) value: f64,
    pub(super) grad: f64,
    pub(super) hess: f64,
    pub(super) third: f64,
    pub(super) scale_jet: f64,
    /// Largest `S / |reference|` over outputs with a non-zero reference (how much the
    /// scale exceeds the magnitude; 1 means no cancellation at all).
    pub(super) amplification: f64,
    /// Number of compared outputs with reference 0, and with `S/|reference|` in
    /// `[1, 10]`, `(10, 1e3]`, `(1e3, 1e6]`, `(1e6, 1e10]`, above.
    pub(super) histogram: [u64; 6],
    /// Points skipped (the sign of a zero reaches an atan2 differently).
    pub(super) skipped: usize,
}

impl Worst {
    pub(super) fn merge(&mut self, o: &Worst) {
        self.value = self.value.max(o.value);
        self.grad = self.grad.max(o.grad);
        self.hess = self.hess.max(o.hess);
        self.third = self.third.max(o.third);
        self.scale_jet = self.scale_jet.max(o.scale_jet);
        self.amplification = self.amplification.max(o.amplification);
        for (h, o) in self.histogram.iter_mut().zip(o.histogram) {
            *h += o;
        }
        self.skipped += o.skipped;
    }
}

/// `|got − want| / s`, asserted `≤ TOL` (exact equality when `s = 0`).
pub(super) fn rel(
    got: f64,
    want: f64,
    s: f64,
    what: &dyn Fn() -> String,
) -> Result<f64, TestCaseError> {
    let r = if got == want {
        0.0
    } else {
        (got - want).abs() / s
    };
    prop_assert!(
        r <= TOL,
        "{}: engine {got:e} vs reference {want:e}, condition scale {s:e}: \
         |Δ|/S = {r:e} > {TOL:e}",
        what()
    );
    Ok(r)
}

/// Compare the engine with the references on one op list (output `out`) over `n`
/// coordinates: values at every point of `pts`, derivatives (direction `dir` for the third
/// contraction) at the first `n_deriv` points where every tanh argument is in range.
/// Points where the sign of a zero reaches an atan2 differently (engine issue, module docs)
/// are skipped. `strict`: non-finite references fail (deep generator) instead of rejecting
/// the case (shallow generator, which also rejects a case without a point for the
/// derivatives).
pub(super) fn check_case(
    n: usize,
    ops: &[Op],
    out: usize,
    pts: &[Vec<f64>],
    dir: &[f64],
    n_deriv: usize,
    strict: bool,
) -> Result<Worst, TestCaseError> {
    let n_pts = pts.len();
    let finite = |ok: bool, what: &str| -> Result<(), TestCaseError> {
        if ok {
            Ok(())
        } else if strict {
            Err(TestCaseError::fail(format!("non-finite {what}\n{ops:?}")))
        } else {
            Err(TestCaseError::reject(format!("non-finite {what}")))
        }
    };
    let mut worst = Worst::default();
    let mut amp = |want: f64, s: f64| {
        let bucket = if want == 0.0 {
            0
        } else {
            let a = s / want.abs();
            worst.amplification = worst.amplification.max(a);
            1 + [1e1, 1e3, 1e6, 1e10].iter().filter(|&&t| a > t).count()
        };
        worst.histogram[bucket] += 1;
    };
    let mut g = Graph::new();
    let ids = build_graph(&mut g, ops);
    let v = ids[out];
    let pts: Vec<&Vec<f64>> = pts
        .iter()
        .filter(|p| !zero_sign_differs(ops, &g, &ids, p))
        .collect();
    let deriv_pts: Vec<&Vec<f64>> = pts
        .iter()
        .copied()
        .filter(|p| tanh_in_range(ops, p))
        .take(n_deriv)
        .collect();
    if !strict {
        prop_assume!(!deriv_pts.is_empty(), "no point for the derivatives");
    }
    let env = |p: &[f64]| {
        let (p, dir) = (p.to_vec(), dir.to_vec());
        move |var: Var| match var {
            Var::Q(i) => p[i as usize],
            Var::Dir(j) => dir[j as usize],
            _ => f64::NAN,
        }
    };

    // Simplification never changes a value: at every point.
    let mut w_value = 0.0f64;
    for &p in &pts {
        let raw = eval_ops::<f64>(ops, p);
        finite(raw.iter().all(|x| x.is_finite()), "raw value")?;
        let q: Vec<Cond> = p.iter().map(|&x| Cond::var(x, [0.0; 3])).collect();
        let s = eval_ops(ops, &q)[out].scale(0);
        finite(s.is_finite(), "value scale")?;
        let got = g.eval(v, &env(p));
        let want = raw[out];
        amp(want, s);
        let r = rel(got, want, s, &|| format!("value at q = {p:?}\n{ops:?}"))?;
        w_value = w_value.max(r);
    }

    let grad = g.gradient(v, n);
    let hess = g.hessian(&grad);
    let third = g.third_contraction(&grad);
    let fwd = g.gradient_forward(v, n);
    // Gradient, the full Hessian (row major; the lower triangle is the engine's mirror of
    // the upper one), third contraction.
    let mut all = grad.clone();
    all.extend(hess.iter().flatten());
    all.extend(&third);
    let prog = schedule(&g, &all);
    worst.skipped = n_pts - pts.len();
    let (mut w_grad, mut w_hess, mut w_third, mut w_jet) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for p in deriv_pts {
        let env = env(p);
        let interp = g.eval_many(&all, &env);
        // The schedule evaluates the same operations in the same order: identical bits.
        let run = prog.eval(&env);
        prop_assert_eq!(
            interp.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            run.iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
        let fwd = g.eval_many(&fwd, &env);
        let what = |kind: &str, idx: String| format!("{kind}{idx} at q = {p:?}\n{ops:?}");
        for i in 0..n {
            for j in i..n {
                let seed = |k: usize, m: usize| f64::from(u8::from(k == m));
                let q: Vec<HyperDual64> = (0..n)
                    .map(|k| HyperDual64::new(p[k], seed(k, i), seed(k, j), 0.0))
                    .collect();
                let r = eval_ops(ops, &q)[out];
                let q: Vec<Cond> = (0..n)
                    .map(|k| Cond::var(p[k], [seed(k, i), seed(k, j), 0.0]))
                    .collect();
                let c = eval_ops(ops, &q)[out];
                finite(
                    [r.eps1, r.eps1eps2, c.scale(1), c.scale(3)]
                        .iter()
                        .all(|x| x.is_finite()),
                    "derivative reference or scale",
                )?;
                if i == j {
                    let s = c.scale(1);
                    amp(r.eps1, s);
                    let w = what("∂V/∂q", format!("[{i}]"));
                    w_grad = w_grad.max(rel(interp[i], r.eps1, s, &|| w.clone())?);
                    let wf = what("forward-mode ∂V/∂q", format!("[{i}]"));
                    w_grad = w_grad.max(rel(fwd[i], r.eps1, s, &|| wf.clone())?);
                    let w = what("Cond jet of ∂V/∂q", format!("[{i}]"));
                    w_jet = w_jet.max(rel(c.v.0[1], r.eps1, s, &|| w.clone())?);
                }
                let s = c.scale(3);
                amp(r.eps1eps2, s);
                for (k, l) in [(i, j), (j, i)] {
                    let w = what("Hessian", format!("[{k}][{l}]"));
                    let got = interp[n + k * n + l];
                    w_hess = w_hess.max(rel(got, r.eps1eps2, s, &|| w.clone())?);
                }
                let w = what("Cond jet of the Hessian", format!("[{i}][{j}]"));
                w_jet = w_jet.max(rel(c.v.0[3], r.eps1eps2, s, &|| w.clone())?);
            }
        }
        for i in 0..n {
            let q: Vec<HyperHyperDual64> = (0..n)
                .map(|k| {
                    let e = f64::from(u8::from(k == i));
                    HyperHyperDual64::new(p[k], e, dir[k], dir[k], 0.0, 0.0, 0.0, 0.0)
                })
                .collect();
            let r = eval_ops(ops, &q)[out].eps1eps2eps3;
            let q: Vec<Cond> = (0..n)
                .map(|k| Cond::var(p[k], [f64::from(u8::from(k == i)), dir[k], dir[k]]))
                .collect();
            let c = eval_ops(ops, &q)[out];
            let s = c.scale(7);

            finite(
                r.is_finite() && s.is_finite(),
                "third-order reference or scale",
            )?;
            amp(r, s);
            let w = what("T", format!("[{i}]"));
            w_third = w_third.max(rel(interp[n + n * n + i], r, s, &|| w.clone())?);
            let w = what("Cond jet of T", format!("[{i}]"));
            w_jet = w_jet.max(rel(c.v.0[7], r, s, &|| w.clone())?);
        }
    }
    worst.value = w_value;
    worst.grad = w_grad;
    worst.hess = w_hess;
    worst.third = w_third;
    worst.scale_jet = w_jet;
    Ok(worst)
}
