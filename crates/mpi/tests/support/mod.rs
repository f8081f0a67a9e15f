//! Helpers shared by the integration tests (each test crate uses a part of them).
#![allow(dead_code)]

pub mod c_header;
