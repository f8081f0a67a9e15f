//! Compiles the C helpers: long double and binary128 arithmetic, which Rust cannot express.

fn main() {
    println!("cargo:rerun-if-changed=csrc/long_double.c");
    println!("cargo:rerun-if-changed=csrc/binary128.c");
    cc::Build::new().file("csrc/long_double.c").file("csrc/binary128.c").flag_if_supported("-std=c11").compile("braid_long_double");
}
