//! The stepper `--integrator` names ([`CliStepper`]: steps, checkpoints, reports its solves),
//! wrapped in GLA Langevin when `--gamma` and `--kt` are given.

use zs_runtime::checkpoint::Resumable;
use zs_runtime::{
    ConstrainedModel, ConstraintSpace, Langevin, LinearlyImplicitNewmark, Model, Newmark,
    PushForwardNewmark, Rattle, Settle, Shake, Stepper, StiffModel, Vector, VelocityVerlet,
    ZhangSkeel, ZhangSkeelSimplified, ZhangSkeelStiff,
};

use super::Job;
use crate::cli::IntegratorName;
use crate::rigid_body::{cayley::CayleyEuler, MagnetizedRigidBody};

/// A stepper chosen on the command line: steps, checkpoints, reports its solves.
pub trait CliStepper<P: ?Sized, V>: Stepper<P, V> + Resumable + Send {
    /// `(Cholesky solves, fallbacks)` for the summary, when the method solves.
    fn solves(&self) -> Option<(u64, u64)> {
        None
    }
}

macro_rules! cli_stepper {
    ($bound:ident, $($ty:ident),*) => {$(
        impl<P: $bound<V> + ?Sized, V: Vector> CliStepper<P, V> for $ty<V> {
            fn solves(&self) -> Option<(u64, u64)> {
                let s = self.stats();
                Some((s.cholesky_solves, s.lu_fallbacks))
            }
        }
    )*};
}
cli_stepper!(
    Model,
    ZhangSkeel,
    ZhangSkeelSimplified,
    Newmark,
    LinearlyImplicitNewmark,
    PushForwardNewmark
);
cli_stepper!(StiffModel, ZhangSkeelStiff);

impl<P: Model<V> + ?Sized, V: Vector> CliStepper<P, V> for VelocityVerlet<V> {}

impl<P: Model<V> + ?Sized, V: Vector> CliStepper<P, V> for Settle<V> {}

impl CliStepper<MagnetizedRigidBody, [f64; 9]> for CayleyEuler {}

impl<S: ConstrainedModel<V, C> + ?Sized, V: ConstraintSpace<C>, C: Vector> CliStepper<S, V>
    for Shake<V, C>
{
}
impl<S: ConstrainedModel<V, C> + ?Sized, V: ConstraintSpace<C>, C: Vector> CliStepper<S, V>
    for Rattle<V, C>
{
}

impl<'a, P: Model<V> + ?Sized, V: Vector> CliStepper<P, V>
    for Langevin<Box<dyn CliStepper<P, V> + 'a>>
{
    fn solves(&self) -> Option<(u64, u64)> {
        self.inner().solves()
    }
}

impl Job<'_> {
    /// The penalty method of `--integrator` (not SHAKE, RATTLE or lie-euler, which
    /// [`Job::run`] and the rigid body's description handle).
    pub(super) fn penalty_stepper<P: StiffModel<V> + ?Sized, V: Vector>(
        &self,
    ) -> Box<dyn CliStepper<P, V>> {
        let (h, beta) = (self.p.h, self.p.beta);
        let limit = self.args.max_condition;
        match self.p.method {
            IntegratorName::Zs => {
                let mut s = ZhangSkeel::new(beta, h);
                if let Some(c) = limit {
                    s = s.with_max_condition(c);
                }
                Box::new(s)
            }
            IntegratorName::Zss => {
                let mut s = ZhangSkeelSimplified::new(beta, h);
                if let Some(c) = limit {
                    s = s.with_max_condition(c);
                }
                Box::new(s)
            }
            IntegratorName::ZssStiff => Box::new(ZhangSkeelStiff::new(beta, h)),
            IntegratorName::Newmark => Box::new(Newmark::new(beta, h)),
            IntegratorName::Newmark1 => Box::new(LinearlyImplicitNewmark::new(beta, h)),
            IntegratorName::Pushforward => Box::new(PushForwardNewmark::new(beta, h)),
            IntegratorName::Verlet => Box::new(VelocityVerlet::new(h)),
            IntegratorName::Shake
            | IntegratorName::Rattle
            | IntegratorName::Settle
            | IntegratorName::LieEuler => {
                unreachable!("SHAKE, RATTLE, SETTLE and lie-euler are not penalty methods")
            }
        }
    }

    /// Wrap in GLA Langevin when `--gamma` and `--kt` are given.
    pub(super) fn maybe_langevin<'s, P: Model<V> + ?Sized + 's, V: Vector>(
        &self,
        inner: Box<dyn CliStepper<P, V> + 's>,
    ) -> Box<dyn CliStepper<P, V> + 's> {
        match (self.args.gamma, self.args.kt) {
            (Some(gamma), Some(kt)) => {
                Box::new(Langevin::new(inner, gamma, kt, self.args.seed.unwrap_or(0)))
            }
            _ => inner,
        }
    }
}
