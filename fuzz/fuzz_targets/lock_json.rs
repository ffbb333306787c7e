//! libFuzzer target `lock_json`: the body `fuzz_bodies::lock_json` (core/tests/fuzz_bodies/mod.rs), shared with the
//! stable test core/tests/fuzz_corpus.rs.
#![no_main]

#[path = "../../core/tests/fuzz_bodies/mod.rs"]
mod bodies;

libfuzzer_sys::fuzz_target!(|data: &[u8]| bodies::lock_json(data));
