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
    /// Each input type: its handle when the type was made, and its description.
    pub types: Vec<(MPI_Datatype, Arc<TypeInfo>)>,
}

impl Origin {
    pub(crate) fn constructed(combiner: c_int, integers: Vec<c_int>, addresses: Vec<MPI_Aint>, types: Vec<(MPI_Datatype, Arc<TypeInfo>)>) -> Origin {
        Origin::Constructed(Arc::new(Envelope { combiner, integers, addresses, types }))
    }

    pub(super) fn envelope(&self) -> Option<&Envelope> {
        match self {
            Origin::Named(_) => None,
            Origin::Constructed(envelope) | Origin::Parameterized(_, envelope) => Some(envelope),
        }
    }
}
