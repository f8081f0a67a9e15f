//! The parts of the `mpi` and `mpi_f08` modules that no C prototype gives (used by fortran.rs and
//! fortran_f08.rs): the explicit interfaces of the routines whose bindings are written by hand
//! (src/fortran_binding/manual.rs), and MPI_Sizeof, a generic over the intrinsic types whose
//! module procedures return the size of one element.

use std::fmt::Write as _;

/// Which module an interface is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Module {
    /// `mpi`: handles are INTEGER, `ierror` is required.
    Mpi,
    /// `mpi_f08`: handles are TYPE(MPI_Comm) and friends, `ierror` is optional, and the routines
    /// that MPI-3 removed from the standard (MPI-1's attribute, keyval and datatype calls) are
    /// left out, as the standard's mpi_f08 has none.
    F08,
}

impl Module {
    fn ierror(self) -> &'static str {
        match self {
            Module::Mpi => "INTEGER :: ierror",
            Module::F08 => "INTEGER, OPTIONAL :: ierror",
        }
    }

    /// The declared type of a handle of C type `handle` (`MPI_Comm`).
    fn handle(self, handle: &str) -> String {
        match self {
            Module::Mpi => "INTEGER".to_string(),
            Module::F08 => format!("TYPE({handle})"),
        }
    }
}

/// One handwritten routine: its name, its Fortran arguments (without `ierror`), whether it has an
/// `ierror`, which module alone declares it, and its declarations, where `{Comm}`, `{Info}`, `{Datatype}`
/// and `{Request}` stand for the handle types.
struct Handwritten {
    name: &'static str,
    arguments: &'static str,
    ierror: bool,
    /// The one module declaring it: `mpi` for those MPI-3 removed, `mpi_f08` for those taking its
    /// TYPE(MPI_Status).
    only: Option<Module>,
    declarations: &'static [&'static str],
}

/// The handwritten routines but MPI_Init and MPI_Init_thread (fortran.rs's `init_interfaces`),
/// and the Fortran-only MPI_F_sync_reg.
const HANDWRITTEN_INTERFACES: &[Handwritten] = &[
    Handwritten { name: "MPI_F_sync_reg", arguments: "buf", ierror: false, only: None, declarations: &["!GCC$ ATTRIBUTES NO_ARG_CHECK :: buf", "TYPE(*), DIMENSION(*) :: buf"] },
    Handwritten { name: "MPI_Pcontrol", arguments: "level", ierror: false, only: None, declarations: &["INTEGER :: level"] },
    Handwritten { name: "MPI_Info_create_env", arguments: "info", ierror: true, only: None, declarations: &["{Info} :: info"] },
    Handwritten {
        name: "MPI_Comm_spawn",
        arguments: "command, argv, maxprocs, info, root, comm, intercomm, array_of_errcodes",
        ierror: true,
        only: None,
        declarations: &["CHARACTER(LEN=*) :: command, argv(*)", "INTEGER :: maxprocs, root, array_of_errcodes(*)", "{Info} :: info", "{Comm} :: comm, intercomm"],
    },
    Handwritten {
        name: "MPI_Comm_spawn_multiple",
        arguments: "count, array_of_commands, array_of_argv, array_of_maxprocs, array_of_info, root, comm, intercomm, array_of_errcodes",
        ierror: true,
        only: None,
        declarations: &[
            "INTEGER :: count, array_of_maxprocs(*), root, array_of_errcodes(*)",
            "CHARACTER(LEN=*) :: array_of_commands(*), array_of_argv(count,*)",
            "{Info} :: array_of_info(*)",
            "{Comm} :: comm, intercomm",
        ],
    },
    Handwritten {
        name: "MPI_Comm_create_keyval",
        arguments: "comm_copy_attr_fn, comm_delete_attr_fn, comm_keyval, extra_state",
        ierror: true,
        only: None,
        declarations: &["EXTERNAL :: comm_copy_attr_fn, comm_delete_attr_fn", "INTEGER :: comm_keyval", "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state"],
    },
    Handwritten {
        name: "MPI_Type_create_keyval",
        arguments: "type_copy_attr_fn, type_delete_attr_fn, type_keyval, extra_state",
        ierror: true,
        only: None,
        declarations: &["EXTERNAL :: type_copy_attr_fn, type_delete_attr_fn", "INTEGER :: type_keyval", "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state"],
    },
    Handwritten {
        name: "MPI_Win_create_keyval",
        arguments: "win_copy_attr_fn, win_delete_attr_fn, win_keyval, extra_state",
        ierror: true,
        only: None,
        declarations: &["EXTERNAL :: win_copy_attr_fn, win_delete_attr_fn", "INTEGER :: win_keyval", "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state"],
    },
    Handwritten {
        name: "MPI_Grequest_start",
        arguments: "query_fn, free_fn, cancel_fn, extra_state, request",
        ierror: true,
        only: None,
        declarations: &["EXTERNAL :: query_fn, free_fn, cancel_fn", "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state", "{Request} :: request"],
    },
    Handwritten {
        name: "MPI_Register_datarep",
        arguments: "datarep, read_conversion_fn, write_conversion_fn, dtype_file_extent_fn, extra_state",
        ierror: true,
        only: None,
        declarations: &["CHARACTER(LEN=*) :: datarep", "EXTERNAL :: read_conversion_fn, write_conversion_fn, dtype_file_extent_fn", "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state"],
    },
    Handwritten {
        name: "MPI_Register_datarep_c",
        arguments: "datarep, read_conversion_fn, write_conversion_fn, dtype_file_extent_fn, extra_state",
        ierror: true,
        only: Some(Module::F08),
        declarations: &["CHARACTER(LEN=*) :: datarep", "EXTERNAL :: read_conversion_fn, write_conversion_fn, dtype_file_extent_fn", "INTEGER(KIND=MPI_ADDRESS_KIND) :: extra_state"],
    },
    Handwritten {
        name: "MPI_Keyval_create",
        arguments: "copy_fn, delete_fn, keyval, extra_state",
        ierror: true,
        only: Some(Module::Mpi),
        declarations: &["EXTERNAL :: copy_fn, delete_fn", "INTEGER :: keyval, extra_state"],
    },
    Handwritten { name: "MPI_Attr_put", arguments: "comm, keyval, attribute_val", ierror: true, only: Some(Module::Mpi), declarations: &["{Comm} :: comm", "INTEGER :: keyval, attribute_val"] },
    Handwritten {
        name: "MPI_Attr_get",
        arguments: "comm, keyval, attribute_val, flag",
        ierror: true,
        only: Some(Module::Mpi),
        declarations: &["{Comm} :: comm", "INTEGER :: keyval, attribute_val", "LOGICAL :: flag"],
    },
    Handwritten {
        name: "MPI_Type_hvector",
        arguments: "count, blocklength, stride, oldtype, newtype",
        ierror: true,
        only: Some(Module::Mpi),
        declarations: &["INTEGER :: count, blocklength, stride", "{Datatype} :: oldtype, newtype"],
    },
    Handwritten {
        name: "MPI_Type_hindexed",
        arguments: "count, array_of_blocklengths, array_of_displacements, oldtype, newtype",
        ierror: true,
        only: Some(Module::Mpi),
        declarations: &["INTEGER :: count, array_of_blocklengths(*), array_of_displacements(*)", "{Datatype} :: oldtype, newtype"],
    },
    Handwritten {
        name: "MPI_Type_struct",
        arguments: "count, array_of_blocklengths, array_of_displacements, array_of_types, newtype",
        ierror: true,
        only: Some(Module::Mpi),
        declarations: &["INTEGER :: count, array_of_blocklengths(*), array_of_displacements(*)", "{Datatype} :: array_of_types(*), newtype"],
    },
    Handwritten { name: "MPI_Type_extent", arguments: "datatype, extent", ierror: true, only: Some(Module::Mpi), declarations: &["{Datatype} :: datatype", "INTEGER :: extent"] },
    Handwritten { name: "MPI_Type_lb", arguments: "datatype, displacement", ierror: true, only: Some(Module::Mpi), declarations: &["{Datatype} :: datatype", "INTEGER :: displacement"] },
    Handwritten { name: "MPI_Type_ub", arguments: "datatype, displacement", ierror: true, only: Some(Module::Mpi), declarations: &["{Datatype} :: datatype", "INTEGER :: displacement"] },
    Handwritten {
        name: "MPI_Address",
        arguments: "location, address",
        ierror: true,
        only: Some(Module::Mpi),
        declarations: &["!GCC$ ATTRIBUTES NO_ARG_CHECK :: location", "TYPE(*), DIMENSION(*) :: location", "INTEGER :: address"],
    },
    Handwritten {
        name: "MPI_Status_f2f08",
        arguments: "f_status, f08_status",
        ierror: true,
        only: Some(Module::F08),
        declarations: &["INTEGER :: f_status(MPI_STATUS_SIZE)", "TYPE(MPI_Status) :: f08_status"],
    },
    Handwritten {
        name: "MPI_Status_f082f",
        arguments: "f08_status, f_status",
        ierror: true,
        only: Some(Module::F08),
        declarations: &["TYPE(MPI_Status) :: f08_status", "INTEGER :: f_status(MPI_STATUS_SIZE)"],
    },
];

/// The names of the handwritten routines that have an interface in `module` (MPI_Init and
/// MPI_Init_thread included).
#[allow(dead_code)] // used by tests/fortran_generator.rs
pub fn handwritten_with_interface(module: Module) -> Vec<&'static str> {
    let mut names = vec!["MPI_Init", "MPI_Init_thread"];
    names.extend(HANDWRITTEN_INTERFACES.iter().filter(|h| h.only.is_none_or(|only| only == module)).map(|h| h.name));
    names
}

/// The interface bodies of the handwritten routines (but MPI_Init and MPI_Init_thread), for the
/// module's INTERFACE block.
pub fn handwritten_interfaces(module: Module) -> String {
    let mut out = String::new();
    for routine in HANDWRITTEN_INTERFACES.iter().filter(|h| h.only.is_none_or(|only| only == module)) {
        let arguments = if routine.ierror { format!("{}, ierror", routine.arguments) } else { routine.arguments.to_string() };
        out.push_str(&crate::fortran::wrap("    ", &format!("SUBROUTINE {}({arguments})", routine.name)));
        out.push_str("      IMPORT\n      IMPLICIT NONE\n");
        for declaration in routine.declarations {
            let mut line = declaration.to_string();
            for handle in ["Comm", "Info", "Datatype", "Request"] {
                line = line.replace(&format!("{{{handle}}}"), &module.handle(&format!("MPI_{handle}")));
            }
            let _ = writeln!(out, "      {line}");
        }
        if routine.ierror {
            let _ = writeln!(out, "      {}", module.ierror());
        }
        let _ = writeln!(out, "    END SUBROUTINE {}", routine.name);
    }
    out
}

/// The intrinsic types MPI_Sizeof takes: the name of its module procedure's suffix, the Fortran
/// type. Every kind gfortran has on x86-64 but REAL(10) and COMPLEX(10), which MPI has no
/// datatype for.
const SIZEOF_TYPES: &[(&str, &str)] = &[
    ("integer1", "INTEGER(KIND=1)"),
    ("integer2", "INTEGER(KIND=2)"),
    ("integer4", "INTEGER(KIND=4)"),
    ("integer8", "INTEGER(KIND=8)"),
    ("integer16", "INTEGER(KIND=16)"),
    ("real4", "REAL(KIND=4)"),
    ("real8", "REAL(KIND=8)"),
    ("real16", "REAL(KIND=16)"),
    ("complex4", "COMPLEX(KIND=4)"),
    ("complex8", "COMPLEX(KIND=8)"),
    ("complex16", "COMPLEX(KIND=16)"),
    ("logical1", "LOGICAL(KIND=1)"),
    ("logical2", "LOGICAL(KIND=2)"),
    ("logical4", "LOGICAL(KIND=4)"),
    ("logical8", "LOGICAL(KIND=8)"),
];

/// The specification part of MPI_Sizeof: the generic interface and its private procedures.
pub fn sizeof_generic() -> String {
    let procedures: Vec<String> = SIZEOF_TYPES.iter().map(|(suffix, _)| format!("braid_sizeof_{suffix}")).collect();
    let mut out = crate::fortran::wrap("  ", &format!("PRIVATE :: {}", procedures.join(", ")));
    out.push_str("  INTERFACE MPI_Sizeof\n");
    out.push_str(&crate::fortran::wrap("    ", &format!("MODULE PROCEDURE {}", procedures.join(", "))));
    out.push_str("  END INTERFACE\n");
    out
}

/// The module procedures of MPI_Sizeof (after CONTAINS): `x` is a scalar or an array of any rank
/// (assumed rank), `size` the bytes of one element.
pub fn sizeof_procedures(module: Module) -> String {
    let mut out = String::new();
    for (suffix, fortran_type) in SIZEOF_TYPES {
        let set_ierror = match module {
            Module::Mpi => "ierror = MPI_SUCCESS",
            Module::F08 => "IF (PRESENT(ierror)) ierror = MPI_SUCCESS",
        };
        let _ = writeln!(
            out,
            "  SUBROUTINE braid_sizeof_{suffix}(x, size, ierror)\n    {fortran_type}, INTENT(IN) :: x(..)\n    INTEGER, INTENT(OUT) :: size\n    {}\n    size = STORAGE_SIZE(x) / 8\n    {set_ierror}\n  END SUBROUTINE braid_sizeof_{suffix}",
            module.ierror(),
        );
    }
    out
}
