//! The wasmtime configuration of the `baton` binary, in one place: `build.rs` precompiles the embedded core
//! with it and [`crate::engine`] loads that artifact with it. wasmtime refuses an artifact compiled with
//! settings the running engine does not share, so the two must come from the same code.
//!
//! This file is compiled twice: into the crate (`engine::config`) and into the build script (by `#[path]`).

use wasmtime::Config;

/// The configuration of the engine that runs the core in the `baton` process: the host target, with the
/// CPU features wasmtime detects on the machine it runs on (an in-memory compile, the fallback when the
/// embedded artifact cannot be used, then uses them).
pub fn run() -> Config {
    let mut config = Config::new();
    // Fixed rather than read from `WASMTIME_BACKTRACE_DETAILS` (wasmtime's default): the variable changes
    // how code is compiled, so a value set at build or run time would make the embedded artifact unusable.
    config.wasm_backtrace_details(wasmtime::WasmBacktraceDetails::Disable);
    // Cold start (`baton scope` runs one decision): the core's 80 KB of data is copied into its memory at
    // instantiation instead of mapped from a memfd image made at load (memfd_create, write, seal: more work
    // for the one instance a process makes), and no wasm address map is kept (it only adds wasm offsets to
    // trap messages; the core aborts on a bug and the host reports that as INTERNAL anyway): the artifact
    // shrinks from 2.64 to 2.30 MB.
    config.memory_init_cow(false);
    config.generate_address_map(false);
    config
}

/// The configuration the build script precompiles the core with, for `target` (a rustc target triple, the
/// build script's `$TARGET`): [`run`] with the target named explicitly. An explicit target makes wasmtime
/// assume only the architecture's baseline ISA (x86-64: SSE2; aarch64: ARMv8.0) and infer nothing from the
/// build machine's CPU, so the artifact loads on every CPU of that architecture: on load, wasmtime checks
/// that each CPU feature the artifact was compiled for is present, and it was compiled for none.
///
/// Fails if wasmtime does not know the triple.
pub fn precompile(target: &str) -> wasmtime::Result<Config> {
    let mut config = run();
    config.target(target)?;
    Ok(config)
}
