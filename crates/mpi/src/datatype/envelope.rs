//! How each datatype was made, as MPI_Type_get_envelope and MPI_Type_get_contents (in `contents`)
//! report it: every description keeps its constructor's arguments and input types.

use std::ffi::c_int;
use std::sync::Arc;

use super::TypeInfo;
use crate::consts::*;

/// The origin of a description.
#[derive(Clone, Debug)]
pub(crate) enum Origin {
    /// A predefined type: its handle.
    Named(MPI_Datatype),
    /// Made by a constructor.
    Constructed(Arc<Envelope>),
    /// Made by MPI_Type_create_f90_*: a predefined type (returned as is, never freed) that still
    /// reports the arguments it was made from.
    Parameterized(MPI_Datatype, Arc<Envelope>),
}

/// A constructor's combiner and arguments, in MPI_Type_get_contents order.
#[derive(Debug)]
pub(crate) struct Envelope {
    pub combiner: c_int,
    pub integers: Vec<c_int>,
    pub addresses: Vec<MPI_Aint>,
    /// The counts and displacements of a large-count (`_c`) constructor (MPI 4.0).
    pub large: Vec<MPI_Count>,
    /// Each input type: its handle when the type was made, and its description.
    pub types: Vec<(MPI_Datatype, Arc<TypeInfo>)>,
}

/// An integer argument of a type constructor as its form takes it: an int, an address-sized
/// integer (the h-variants' byte displacements and strides), or a large count (the `_c` forms).
/// Which it is says where MPI_Type_get_contents lists it.
pub(crate) trait Argument: Copy {
    fn value(self) -> i64;
    fn record(self, parts: &mut Parts);
}

impl Argument for c_int {
    fn value(self) -> i64 {
        self.into()
    }
    fn record(self, parts: &mut Parts) {
        parts.integers.push(self);
    }
}

impl Argument for MPI_Aint {
    fn value(self) -> i64 {
        self as i64
    }
    fn record(self, parts: &mut Parts) {
        parts.addresses.push(self);
    }
}

impl Argument for MPI_Count {
    fn value(self) -> i64 {
        self
    }
    fn record(self, parts: &mut Parts) {
        parts.large.push(self);
    }
}

/// A constructor's arguments as they are recorded, each in its list, in call order.
#[derive(Default)]
pub(crate) struct Parts {
    pub integers: Vec<c_int>,
    pub addresses: Vec<MPI_Aint>,
    pub large: Vec<MPI_Count>,
}

impl Parts {
    pub(crate) fn with(mut self, value: impl Argument) -> Parts {
        value.record(&mut self);
        self
    }

    pub(crate) fn with_all<A: Argument>(mut self, values: &[A]) -> Parts {
        for &value in values {
            value.record(&mut self);
        }
        self
    }
}

impl Origin {
    pub(crate) fn constructed(combiner: c_int, integers: Vec<c_int>, addresses: Vec<MPI_Aint>, types: Vec<(MPI_Datatype, Arc<TypeInfo>)>) -> Origin {
        Origin::Constructed(Arc::new(Envelope { combiner, integers, addresses, large: Vec::new(), types }))
    }

    /// A constructor's origin from its recorded arguments.
    pub(crate) fn recorded(combiner: c_int, parts: Parts, types: Vec<(MPI_Datatype, Arc<TypeInfo>)>) -> Origin {
        let Parts { integers, addresses, large } = parts;
        Origin::Constructed(Arc::new(Envelope { combiner, integers, addresses, large, types }))
    }

    pub(super) fn envelope(&self) -> Option<&Envelope> {
        match self {
            Origin::Named(_) => None,
            Origin::Constructed(envelope) | Origin::Parameterized(_, envelope) => Some(envelope),
        }
    }
}
