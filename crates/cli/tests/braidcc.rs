//! The compiler wrappers bin/braidcc and bin/braidcxx.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn wrapper(name: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(repository().join("bin").join(name));
    command.args(args).env_remove("BRAID_CC").env_remove("BRAID_CXX").env_remove("BRAID_LIBDIR");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

fn shown(name: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let output = wrapper(name, args, env);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap().trim_end().to_string()
}

/// A scratch directory removed at the end of the test.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let path = std::env::temp_dir().join(format!("braid-cc-test-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&path).unwrap();
        Scratch(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn show_prints_include_and_link_flags() {
    let root = repository();
    let release = root.join("target/release");
    let expected = format!("cc -I{}/include ring.c -o ring -L{} -Wl,-rpath,{} -lbraid", root.display(), release.display(), release.display());
    assert_eq!(shown("braidcc", &["-show", "ring.c", "-o", "ring"], &[]), expected);
}

#[test]
fn compiling_only_adds_no_link_flags() {
    for flag in ["-c", "-E", "-S", "-M", "-MM"] {
        let line = shown("braidcc", &["-show", flag, "ring.c"], &[]);
        assert!(line.contains("/include") && !line.contains("-lbraid") && !line.contains("rpath"), "{flag}: {line}");
    }
}

#[test]
fn the_environment_chooses_compiler_and_library_directory() {
    let line = shown("braidcc", &["-show", "a.c"], &[("BRAID_CC", "ccache gcc"), ("BRAID_LIBDIR", "/opt/braid lib")]);
    assert!(line.starts_with("ccache gcc -I"), "{line}");
    assert!(line.ends_with("a.c '-L/opt/braid lib' '-Wl,-rpath,/opt/braid lib' -lbraid"), "{line}");
    assert!(shown("braidcxx", &["-show", "-c", "a.cc"], &[]).starts_with("c++ -I"));
    assert!(shown("braidcxx", &["-show", "-c", "a.cc"], &[("BRAID_CXX", "clang++")]).starts_with("clang++ -I"));
}

#[test]
fn a_symlinked_wrapper_still_finds_the_repository() {
    let scratch = Scratch::new("link");
    let link = scratch.0.join("mpicc-braid");
    std::os::unix::fs::symlink(repository().join("bin/braidcc"), &link).unwrap();
    let output = Command::new(&link).args(["-show", "-c", "x.c"]).env_remove("BRAID_CC").output().unwrap();
    let line = String::from_utf8(output.stdout).unwrap();
    assert_eq!(line.trim_end(), format!("cc -I{}/include -c x.c", repository().display()));
}

#[test]
fn version_names_braid_and_the_compiler() {
    let output = wrapper("braidcc", &["--version"], &[]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with(&format!("braidcc: Braid {}", env!("CARGO_PKG_VERSION"))), "{text}");
    assert!(text.contains("compiler: cc"), "{text}");
}

#[test]
fn a_program_compiles_links_and_finds_the_library_through_its_rpath() {
    let scratch = Scratch::new("link-run");
    let dir = &scratch.0;
    std::fs::write(dir.join("probe.c"), "int braid_probe(void) { return 42; }\n").unwrap();
    std::fs::write(dir.join("main.c"), "int braid_probe(void);\nint main(void) { return braid_probe(); }\n").unwrap();
    let library = Command::new("cc").args(["-shared", "-fPIC", "-o"]).arg(dir.join("libbraid.so")).arg(dir.join("probe.c")).status().unwrap();
    assert!(library.success());
    let libdir = dir.to_str().unwrap();
    let object = wrapper("braidcc", &["-c", dir.join("main.c").to_str().unwrap(), "-o", dir.join("main.o").to_str().unwrap()], &[("BRAID_LIBDIR", libdir)]);
    assert!(object.status.success(), "{}", String::from_utf8_lossy(&object.stderr));
    let program = dir.join("main");
    let linked = wrapper("braidcc", &[dir.join("main.o").to_str().unwrap(), "-o", program.to_str().unwrap()], &[("BRAID_LIBDIR", libdir)]);
    assert!(linked.status.success(), "{}", String::from_utf8_lossy(&linked.stderr));
    // No LD_LIBRARY_PATH: the rpath alone must find libbraid.so.
    let status = Command::new(&program).env_remove("LD_LIBRARY_PATH").status().unwrap();
    assert_eq!(status.code(), Some(42));

    let missing = wrapper("braidcc", &["x.c"], &[("BRAID_LIBDIR", "/nonexistent")]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("libbraid.so not found"));
}
