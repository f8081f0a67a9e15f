//! Compiles the C helpers: long double arithmetic, which Rust cannot express.

fn main() {
    println!("cargo:rerun-if-changed=csrc/long_double.c");
    cc::Build::new().file("csrc/long_double.c").flag_if_supported("-std=c11").compile("braid_long_double");
}
