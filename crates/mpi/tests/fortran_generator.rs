//! The Fortran generator (build_support/fortran.rs): every MPI function of mpi.h gets a Fortran
//! binding (generated or handwritten) unless it has none in the standard; mpif.h's constants are
//! consts.rs's; a Fortran status has MPI_Status's layout, which the bindings rely on to pass
//! statuses through.

use std::collections::BTreeMap;

use braid::consts::*;

#[allow(dead_code)]
#[path = "../build_support/fortran.rs"]
mod fortran;
#[allow(dead_code)]
#[path = "../build_support/fortran_f08.rs"]
mod fortran_f08;
#[allow(dead_code)]
#[path = "../build_support/fortran_interfaces.rs"]
mod fortran_interfaces;

mod support;
use support::c_header::mpi_h_path;

fn header() -> String {
    std::fs::read_to_string(mpi_h_path()).unwrap()
}

#[test]
fn every_mpi_function_has_a_fortran_binding() {
    let header = header();
    let functions = fortran::functions(&header);
    assert!(functions.len() > 300, "only {} functions parsed", functions.len());
    let missing: Vec<String> = functions
        .iter()
        .filter_map(|f| match fortran::binding(f) {
            fortran::Binding::Missing(why) => Some(why),
            _ => None,
        })
        .collect();
    assert!(missing.is_empty(), "functions without a Fortran binding: {missing:#?}");
    let names: Vec<&str> = functions.iter().map(|f| f.name.as_str()).collect();
    let unknown: Vec<&&str> = fortran::HANDWRITTEN.iter().filter(|name| !names.contains(name)).collect();
    assert!(unknown.is_empty(), "handwritten bindings of functions mpi.h does not declare: {unknown:?}");
}

#[test]
fn parameters_map_to_the_expected_kinds() {
    let header = header();
    let kinds = |name: &str| {
        let function = fortran::functions(&header).into_iter().find(|f| f.name == name).unwrap();
        match fortran::binding(&function) {
            fortran::Binding::Generated(kinds) => kinds,
            other => panic!("{name}: {other:?}"),
        }
    };
    use fortran::{Kind::*, Scalar::*};
    assert_eq!(kinds("MPI_Recv"), [Choice, Value(Int), Value(Int), Value(Int), Value(Int), Value(Int), Status]);
    assert_eq!(kinds("MPI_Waitsome"), [Value(Int), Pointer(Int), Pointer(Int), IndicesOut, Statuses]);
    assert_eq!(kinds("MPI_Testany"), [Value(Int), Pointer(Int), IndexOut, LogicalOut, Status]);
    assert_eq!(kinds("MPI_Info_get"), [Value(Int), StringIn, Value(Int), StringOut, LogicalOut]);
    assert_eq!(kinds("MPI_Cart_create"), [Value(Int), Value(Int), Pointer(Int), Pointer(Logical), Value(Logical), Pointer(Int)]);
    assert_eq!(kinds("MPI_Comm_get_attr"), [Value(Int), Value(Int), AttributeOut, LogicalOut]);
    assert_eq!(kinds("MPI_Comm_set_attr"), [Value(Int), Value(Int), AttributeIn]);
    assert_eq!(kinds("MPI_Alloc_mem"), [Value(Aint), Value(Int), AddressOut]);
    assert_eq!(kinds("MPI_Group_range_incl"), [Value(Int), Value(Int), Pointer(Int), Pointer(Int)]);
    assert_eq!(kinds("MPI_File_seek"), [Value(Int), Value(Offset), Value(Int)]);
    assert_eq!(kinds("MPI_Get_count"), [StatusIn, Value(Int), Pointer(Int)]);
    assert_eq!(kinds("MPI_Buffer_detach"), [DetachedBuffer, Pointer(Int)]);
    assert_eq!(fortran::symbols("MPI_Send"), ["mpi_send_", "mpi_send__", "mpi_send", "MPI_SEND", "pmpi_send_"].map(String::from));
}

/// The PARAMETER values of mpif.h.
fn mpif_parameters() -> BTreeMap<String, String> {
    fortran::mpif_h(&header()).lines().filter_map(|line| line.trim().strip_prefix("PARAMETER (")?.strip_suffix(')')?.split_once('=').map(|(n, v)| (n.to_string(), v.to_string()))).collect()
}

macro_rules! agree {
    ($parameters:expr, $($name:ident),* $(,)?) => {
        $(
            assert_eq!($parameters.get(stringify!($name)).map(String::as_str), Some($name.to_string().as_str()), "mpif.h's {} differs from consts.rs", stringify!($name));
        )*
    };
}

#[test]
fn mpif_h_constants_are_the_c_constants() {
    let parameters = mpif_parameters();
    agree!(
        parameters,
        MPI_COMM_WORLD,
        MPI_COMM_SELF,
        MPI_COMM_NULL,
        MPI_INTEGER,
        MPI_REAL,
        MPI_DOUBLE_PRECISION,
        MPI_COMPLEX,
        MPI_DOUBLE_COMPLEX,
        MPI_LOGICAL,
        MPI_CHARACTER,
        MPI_INTEGER1,
        MPI_INTEGER2,
        MPI_INTEGER4,
        MPI_INTEGER8,
        MPI_REAL4,
        MPI_REAL8,
        MPI_REAL16,
        MPI_2REAL,
        MPI_2DOUBLE_PRECISION,
        MPI_2INTEGER,
        MPI_BYTE,
        MPI_PACKED,
        MPI_SUM,
        MPI_MAXLOC,
        MPI_LAND,
        MPI_LXOR,
        MPI_REPLACE,
        MPI_NO_OP,
        MPI_ANY_SOURCE,
        MPI_ANY_TAG,
        MPI_PROC_NULL,
        MPI_ROOT,
        MPI_UNDEFINED,
        MPI_REQUEST_NULL,
        MPI_ERRORS_RETURN,
        MPI_ERRORS_ARE_FATAL,
        MPI_MAX_ERROR_STRING,
        MPI_MAX_PROCESSOR_NAME,
        MPI_MAX_INFO_KEY,
        MPI_TAG_UB,
        MPI_ERR_RANK,
        MPI_ERR_LASTCODE,
        MPI_THREAD_MULTIPLE,
        MPI_IDENT,
        MPI_UNEQUAL,
        MPI_MODE_NOCHECK,
        MPI_LOCK_SHARED,
        MPI_DISTRIBUTE_DFLT_DARG,
        MPI_VERSION,
        MPI_SUBVERSION,
        MPI_INFO_NULL
    );
    assert_eq!(parameters["MPI_STATUS_SIZE"], MPI_F_STATUS_SIZE.to_string());
    assert_eq!(parameters["MPI_SOURCE"], (MPI_F_SOURCE + 1).to_string());
    assert_eq!(parameters["MPI_TAG"], (MPI_F_TAG + 1).to_string());
    assert_eq!(parameters["MPI_ERROR"], (MPI_F_ERROR + 1).to_string());
    assert_eq!(parameters["MPI_ADDRESS_KIND"], std::mem::size_of::<MPI_Aint>().to_string());
    assert_eq!(parameters["MPI_OFFSET_KIND"], std::mem::size_of::<MPI_Offset>().to_string());
    assert_eq!(parameters["MPI_INTEGER_KIND"], std::mem::size_of::<MPI_Fint>().to_string());
}

#[test]
fn a_fortran_status_is_an_mpi_status() {
    let status = MPI_Status { count_lo: 0, count_hi_and_cancelled: 0, MPI_SOURCE: 11, MPI_TAG: 22, MPI_ERROR: 33 };
    assert_eq!(std::mem::size_of::<MPI_Status>(), MPI_F_STATUS_SIZE as usize * std::mem::size_of::<MPI_Fint>());
    // SAFETY: MPI_Status is repr(C) of MPI_F_STATUS_SIZE ints.
    let fortran: [MPI_Fint; MPI_F_STATUS_SIZE as usize] = unsafe { std::mem::transmute(status) };
    assert_eq!([fortran[MPI_F_SOURCE as usize], fortran[MPI_F_TAG as usize], fortran[MPI_F_ERROR as usize]], [11, 22, 33]);
}

#[test]
fn mpif_h_fits_fixed_form() {
    for line in fortran::mpif_h(&header()).lines() {
        assert!(line.starts_with('!') || (line.starts_with("      ") && line.len() <= 72), "not fixed form: {line:?}");
    }
}

#[test]
fn every_handwritten_routine_has_an_interface_in_a_module() {
    let header = header();
    let module = fortran::mpi_module(&header);
    let f08_module = fortran_f08::mpi_f08_module(&header);
    let with_interface = fortran_interfaces::handwritten_with_interface(fortran_interfaces::Module::Mpi);
    // The status conversions and the large-count forms belong to mpi_f08 alone.
    let f08_only = |name: &str| fortran::F08_STATUS_CONVERSIONS.contains(&name) || fortran::is_large_count_form(name);
    for name in fortran::HANDWRITTEN.iter().filter(|name| !f08_only(name)) {
        assert!(with_interface.contains(name), "{name} has no interface");
        assert!(module.contains(&format!("SUBROUTINE {name}(")), "the mpi module lacks {name}");
    }
    for name in fortran::HANDWRITTEN.iter().filter(|name| f08_only(name)) {
        assert!(f08_module.contains(&format!("SUBROUTINE {name}(")) && !module.contains(&format!("SUBROUTINE {name}(")), "{name} belongs to mpi_f08 alone");
    }
    let f08 = fortran_interfaces::handwritten_with_interface(fortran_interfaces::Module::F08);
    for removed in ["MPI_Address", "MPI_Type_struct", "MPI_Attr_get", "MPI_Keyval_create"] {
        assert!(!f08.contains(&removed), "{removed} was removed by MPI-3: mpi_f08 has no {removed}");
    }
    assert!(f08.contains(&"MPI_Comm_spawn") && f08.contains(&"MPI_Grequest_start"));
}

#[test]
fn routines_returning_an_address_have_a_c_ptr_form() {
    let header = header();
    let module = fortran::mpi_module(&header);
    let bindings = fortran::rust_bindings(&header);
    for name in ["MPI_Alloc_mem", "MPI_Win_allocate", "MPI_Win_allocate_shared", "MPI_Win_shared_query"] {
        assert!(module.contains(&format!("  INTERFACE {name}\n")), "no generic {name}");
        let cptr = module.split(&format!("SUBROUTINE {name}_cptr(")).nth(1).unwrap_or_else(|| panic!("no {name}_cptr"));
        let body = cptr.split("END SUBROUTINE").next().unwrap();
        assert!(body.contains("TYPE(C_PTR) :: baseptr") && body.contains("ONLY : C_PTR"), "{name}_cptr: {body}");
        let lower = name.to_ascii_lowercase();
        for symbol in [format!("{lower}_cptr_"), format!("p{lower}_cptr_"), format!("{}_CPTR", name.to_ascii_uppercase())] {
            assert!(bindings.contains(&format!(" {symbol}")) || bindings.contains(&format!(">{symbol}")), "no entry point {symbol}");
        }
    }
    assert!(!module.contains("SUBROUTINE MPI_Free_mem_cptr"), "only routines with a baseptr get the C_PTR form");
}

#[test]
fn large_count_forms_are_in_mpi_f08_generics_alone() {
    let header = header();
    let f08 = fortran_f08::mpi_f08_module(&header);
    let mpi = fortran::mpi_module(&header);
    let bindings = fortran::rust_bindings(&header);
    for name in ["MPI_Send", "MPI_Get_count", "MPI_Alltoallv", "MPI_Type_size", "MPI_Win_allocate"] {
        let generic = f08.split(&format!("  INTERFACE {name}\n")).nth(1).unwrap_or_else(|| panic!("no generic {name}"));
        let generic = generic.split("  END INTERFACE\n").next().unwrap();
        assert!(generic.contains(&format!("SUBROUTINE {name}(")) && generic.contains(&format!("SUBROUTINE {name}_c(")), "{name}: {generic}");
        assert!(!mpi.contains(&format!("SUBROUTINE {name}_c(")), "the mpi module declares {name}_c");
        assert!(bindings.contains(&format!("{}_c_", name.to_ascii_lowercase())), "no entry point for {name}_c");
    }
    assert!(f08.contains("SUBROUTINE MPI_Win_allocate_c_cptr("), "the large form of an address-returning routine has its C_PTR form");
    // Forms that differ only in an 8-byte kind or a callback's interface cannot share a generic.
    for name in ["MPI_Type_get_extent", "MPI_Op_create"] {
        assert!(!f08.contains(&format!("  INTERFACE {name}\n")), "{name} cannot be generic over its large form");
        assert!(f08.contains(&format!("SUBROUTINE {name}_c(")), "{name}_c is not declared by name");
    }
}
