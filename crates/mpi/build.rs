//! Compiles the C helpers (long double and binary128 arithmetic, which Rust cannot express),
//! lists the MPI_ entry points for the profiling interface (src/pmpi.rs), and generates the
//! Fortran binding from include/mpi.h: its Rust entry points (src/fortran_binding), mpif.h and
//! the `mpi` and `mpi_f08` modules, compiled with the machine's gfortran when there is one.

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "build_support/entry_points.rs"]
mod entry_points;
#[path = "build_support/fortran.rs"]
mod fortran;
#[path = "build_support/fortran_f08.rs"]
mod fortran_f08;
#[path = "build_support/fortran_interfaces.rs"]
mod fortran_interfaces;

fn main() {
    println!("cargo:rerun-if-changed=csrc/long_double.c");
    println!("cargo:rerun-if-changed=csrc/binary128.c");
    cc::Build::new().file("csrc/long_double.c").file("csrc/binary128.c").flag_if_supported("-std=c11").compile("braid_long_double");

    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let sources = manifest_dir.join("src");
    println!("cargo:rerun-if-changed={}", sources.display());
    let mut names = Vec::new();
    let mut types = Vec::new();
    for file in rust_files(&sources) {
        let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("cannot read {}: {e}", file.display()));
        names.extend(entry_points::entry_points(&text));
        types.extend(entry_points::type_names(&text));
    }
    names.retain(|name| !types.contains(name));
    names.sort();
    names.dedup();
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out_dir.join("pmpi_entry_points.rs"), trampoline_list(&names)).expect("cannot write the PMPI list");

    generate_fortran(&manifest_dir, &out_dir);
    build_profiler(&manifest_dir, &out_dir);

    // PMPI_ trampolines jump to the library's own MPI_ functions even when a tool defines MPI_
    // names in front of the library; calls inside the library skip the PLT for the same reason.
    println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic-functions");
    // A trampoline naming a function that does not exist fails the link instead of the loader.
    println!("cargo:rustc-cdylib-link-arg=-Wl,--no-undefined");
}

/// Compiles the job profiler (profiler/, a PMPI interposer in C) against include/mpi.h into
/// target/<profile>/libbraidprof.so, beside the braid launcher that preloads it. It links to no
/// MPI library: its PMPI_ calls bind to whichever one the program loaded.
fn build_profiler(manifest_dir: &Path, out_dir: &Path) {
    let source_dir = manifest_dir.join("../../profiler");
    for file in ["braid_profiler.c", "wrappers.h", "functions.h"] {
        println!("cargo:rerun-if-changed={}", source_dir.join(file).display());
    }
    let profile_dir = out_dir.ancestors().nth(3).expect("OUT_DIR is inside the target directory");
    let compiler = cc::Build::new().get_compiler();
    let status = Command::new(compiler.path())
        .args(["-std=c11", "-O2", "-g", "-Wall", "-Wextra", "-Werror", "-fPIC", "-shared"])
        .arg("-I")
        .arg(manifest_dir.join("../../include"))
        .arg(source_dir.join("braid_profiler.c"))
        .arg("-o")
        .arg(profile_dir.join("libbraidprof.so"))
        .status()
        .unwrap_or_else(|e| panic!("cannot run the C compiler {}: {e}", compiler.path().display()));
    assert!(status.success(), "the job profiler (profiler/braid_profiler.c) did not compile");
}

/// Writes the Rust Fortran entry points to OUT_DIR, and mpif.h, the module sources and (with a
/// Fortran compiler) the compiled modules to target/<profile>/fortran, where bin/braidfort finds
/// them.
fn generate_fortran(manifest_dir: &Path, out_dir: &Path) {
    let header_path = manifest_dir.join("../../include/mpi.h");
    println!("cargo:rerun-if-changed={}", header_path.display());
    println!("cargo:rerun-if-changed=build_support/fortran.rs");
    println!("cargo:rerun-if-changed=build_support/fortran_f08.rs");
    println!("cargo:rerun-if-changed=build_support/fortran_interfaces.rs");
    println!("cargo:rerun-if-env-changed=BRAID_FC");
    let header = std::fs::read_to_string(&header_path).unwrap_or_else(|e| panic!("cannot read {}: {e}", header_path.display()));
    for function in fortran::functions(&header) {
        if let fortran::Binding::Missing(why) = fortran::binding(&function) {
            println!("cargo:warning=no Fortran binding generated: {why}");
        }
    }
    std::fs::write(out_dir.join("fortran_bindings.rs"), fortran::rust_bindings(&header)).expect("cannot write the Fortran bindings");

    // OUT_DIR is target/<profile>/build/braid-mpi-<hash>/out.
    let profile_dir = out_dir.ancestors().nth(3).expect("OUT_DIR is inside the target directory");
    let fortran_dir = profile_dir.join("fortran");
    let include_dir = fortran_dir.join("include");
    std::fs::create_dir_all(&include_dir).expect("cannot create target/<profile>/fortran/include");
    write_if_changed(&include_dir.join("mpif.h"), &fortran::mpif_h(&header));
    let sources = [("mpi", fortran::mpi_module(&header)), ("mpi_f08", fortran_f08::mpi_f08_module(&header))];
    for (name, source) in &sources {
        write_if_changed(&fortran_dir.join(format!("{name}.f90")), source);
    }

    let compiler = std::env::var("BRAID_FC").unwrap_or_else(|_| "gfortran".to_string());
    if Command::new(&compiler).arg("--version").output().is_err() {
        println!("cargo:warning=no Fortran compiler ({compiler}): mpif.h is written, but the `mpi` and `mpi_f08` modules are not compiled; install gfortran (scripts/setup does) or set BRAID_FC, then rebuild");
        return;
    }
    let mut objects = Vec::new();
    for (name, _) in &sources {
        let object = fortran_dir.join(format!("{name}.o"));
        let output = Command::new(&compiler)
            .args(["-c", "-O2", "-fPIC", "-J"])
            .arg(&include_dir)
            .arg(fortran_dir.join(format!("{name}.f90")))
            .arg("-o")
            .arg(&object)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
        assert!(output.status.success(), "{compiler} rejected the generated {name} module:\n{}", String::from_utf8_lossy(&output.stderr));
        objects.push(object);
    }
    // Code the modules define (the handle comparison operators of mpi_f08) goes in a library
    // that braidfort links.
    let archive = fortran_dir.join("libbraid_fortran.a");
    let _ = std::fs::remove_file(&archive);
    let status = Command::new("ar").arg("crs").arg(&archive).args(&objects).status().expect("cannot run ar");
    assert!(status.success(), "ar failed to build {}", archive.display());
}

/// Writes `text` to `path` unless it holds it already (a module's users need not rebuild).
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
    }
}

/// Every `.rs` file under `dir`, in a stable order.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())).map(|entry| entry.expect("directory entry").path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

/// The `trampolines!` invocation that src/pmpi.rs includes.
fn trampoline_list(names: &[String]) -> String {
    let mut list = String::from("// Generated by build.rs: every MPI_ entry point found in src/.\ntrampolines! {\n");
    for name in names {
        list.push_str(&format!("    P{name} => \"{name}\",\n"));
    }
    list.push_str("}\n");
    list
}
