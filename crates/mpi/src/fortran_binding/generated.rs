//! The generated entry points (see build_support/fortran.rs for what each parameter kind becomes).

// The symbols are Fortran's names; the argument lists are MPI's.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments)]

use std::ffi::{c_char, c_int, c_void};

use super::attributes::{attribute_to_fortran, indices_to_fortran, logical_result};
use super::fortran_symbols;
use super::sentinels::Sentinels;
use super::strings::{string_in, StringOut};
use crate::consts::*;

include!(concat!(env!("OUT_DIR"), "/fortran_bindings.rs"));
