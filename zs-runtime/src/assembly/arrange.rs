//! Where an evaluation state holds its bodies inside ([`Arrangement`]), and how the engine is
//! made over it ([`arrange`]): the topology's order, or a spatial order ([`super::order`]) —
//! then the bodies, pins, types, term lists and neighbour list are those of the relabeled
//! topology. Made at set-up; a state in spatial order makes it again, from its positions at
//! the time, every so many neighbour-list builds ([`super::Assembled::with_resort_period`]),
//! as LAMMPS's `atom_modify sort` re-sorts its atoms.

use super::eval::pairs::CutoffPairs;
use super::eval::{Absent, FormOps, FormState};
use super::forms::{Angle, Bond, Dihedral, Form, Pair, Pair14, Site};
use super::neighbors::Neighbors;
use super::order::Order;
use super::plan::Bodies;
use super::terms::{Kernel, Terms};
use super::topology::{Topology, TopologyError};

/// The bodies as one evaluation state holds them: their free indices, pins and types, and the
/// spatial order when it is not the topology's (then all of them are of the relabeled
/// topology). Shared by a state's replicas until one of them re-sorts.
#[derive(Debug)]
pub(crate) struct Arrangement<const D: usize> {
    pub bodies: Bodies,
    /// Every body's position when some body is pinned (read for pinned bodies only), else
    /// empty.
    pub pins: Vec<[f64; D]>,
    /// Every body's type, when a form reads them (else empty: all 0).
    pub kinds: Vec<u32>,
    /// The spatial order, when not the topology's.
    pub order: Option<Order>,
}

impl<const D: usize> Arrangement<D> {
    /// No bodies: what a state holds while it is made anew.
    pub fn empty() -> Self {
        Self {
            bodies: Bodies {
                free_of: Vec::new(),
                free: 0,
            },
            pins: Vec::new(),
            kinds: Vec::new(),
            order: None,
        }
    }

    /// The free index of every body of the topology (the user's order), [`super::plan::PINNED`] for a
    /// pinned one: the order's when the bodies are held in a spatial one.
    pub fn user_free_of(&self) -> &[u32] {
        match &self.order {
            Some(o) => &o.user_free_of,
            None => &self.bodies.free_of,
        }
    }

    /// In spatial order, the user's free index of every inner one (the Hessian pattern's).
    pub fn to_user(&self) -> Option<&[u32]> {
        self.order.as_ref().map(|o| &o.to_user[..])
    }
}

/// What [`arrange`] makes: the arrangement, the forms over it and its neighbour list.
pub(crate) type Arranged<T, const D: usize> = (
    Arrangement<D>,
    Vec<Box<dyn FormOps<T, D>>>,
    Option<Neighbors>,
);

/// The forms of definition `T` over `topology`, the neighbour list of its cutoff, and the
/// arrangement they are made for: of `topology` itself, or (`rank`: user body → inner body) of
/// it relabeled. Allocates everything the engine holds per body and term (set-up).
///
/// # Errors
/// A [`TopologyError`] of the forms (a term list too long for 32-bit slots).
pub(crate) fn arrange<T: Terms<D>, const D: usize>(
    topology: &Topology,
    rank: Option<Vec<u32>>,
) -> Result<Arranged<T, D>, TopologyError> {
    let inner = rank.as_ref().map(|rank| topology.relabeled(rank));
    let engine = inner.as_ref().unwrap_or(topology);
    let bodies = Bodies::new(engine);
    let forms = forms_of::<T, D>(engine, &bodies)?;
    for f in &forms {
        // Local slots `t·K²` of the gather lists are 32-bit.
        if f.len() >= u32::MAX as usize / (f.arity() * f.arity()).max(4) {
            return Err(TopologyError::TooLarge("the number of terms of a form"));
        }
    }
    // Every body's pin, read only for pinned bodies: none without one (a million free bodies
    // need no 24 MB of zeros).
    let mut pins = if engine.pinned().is_empty() {
        Vec::new()
    } else {
        vec![[0.0; D]; topology.bodies()]
    };
    for (&b, p) in engine.pinned() {
        pins[b].copy_from_slice(p);
    }
    // Every body's type when a form reads them (type 0 for all without `types`): the lane
    // kernels of a typed form index one row per lane.
    let kinds = if T::FORMS.any_typed() {
        (0..topology.bodies()).map(|b| engine.kind_of(b)).collect()
    } else {
        Vec::new()
    };
    let neighbors = Neighbors::new(engine);
    let order = rank.map(|rank| Order::new(rank, &Bodies::new(topology), &bodies));
    Ok((
        Arrangement {
            bodies,
            pins,
            kinds,
            order,
        },
        forms,
        neighbors,
    ))
}

/// The forms of a definition `T`, in table order ([`super::forms`]): the one place that lists
/// them for the engine. Every form's terms are summed in this order. A pair form under a cutoff
/// goes to the pair engine ([`CutoffPairs`]), every other form to the term engine.
fn forms_of<T: Terms<D>, const D: usize>(
    topology: &Topology,
    bodies: &Bodies,
) -> Result<Vec<Box<dyn FormOps<T, D>>>, TopologyError> {
    let pairs: Box<dyn FormOps<T, D>> = if const { has::<T, Pair, D>() } {
        let terms = FormState::<Pair, D, 2>::new(Pair::info(&T::FORMS), topology, bodies)?;
        if topology.pair_cutoff().is_some() {
            Box::new(CutoffPairs::new(terms))
        } else {
            Box::new(terms)
        }
    } else {
        Box::new(Absent::<Pair>::new())
    };
    Ok(vec![
        form::<T, Site, D, 1>(topology, bodies)?,
        form::<T, Bond, D, 2>(topology, bodies)?,
        pairs,
        form::<T, Angle, D, 3>(topology, bodies)?,
        form::<T, Dihedral, D, 4>(topology, bodies)?,
        form::<T, Pair14, D, 2>(topology, bodies)?,
    ])
}

fn form<T, F, const D: usize, const K: usize>(
    topology: &Topology,
    bodies: &Bodies,
) -> Result<Box<dyn FormOps<T, D>>, TopologyError>
where
    T: Terms<D> + Kernel<D, K, F>,
    F: Form,
{
    if const { has::<T, F, D>() } {
        Ok(Box::new(FormState::<F, D, K>::new(
            F::info(&T::FORMS),
            topology,
            bodies,
        )?))
    } else {
        Ok(Box::new(Absent::<F>::new()))
    }
}

/// Whether definition `T` has form `F`: a constant, read in `if const`, so that a form the
/// definition lacks makes none of the engine's code — its passes, lanes and rows are
/// monomorphized only for the forms a definition has.
const fn has<T: Terms<D>, F: Form, const D: usize>() -> bool {
    T::FORMS.of(F::OVER).present
}
