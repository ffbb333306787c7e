//! libFuzzer target `names`: the body `fuzz_bodies::names` (core/tests/fuzz_bodies/mod.rs), shared with the
//! stable test core/tests/fuzz_corpus.rs.
#![no_main]

#[path = "../../core/tests/fuzz_bodies/mod.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::names(data));
