//! Embeds the core component (built by `scripts/build-wasm.sh`) into the `baton` binary, together with the
//! machine code wasmtime compiles from those very bytes for the binary's target. `baton` loads that code from
//! its own read-only image and never reads or writes compiled code on disk.
//!
//! Writes into `OUT_DIR`: `baton-core.component.wasm` (the component) and `baton-core.cwasm` (the
//! precompiled core: compiled with `engine::config::precompile`, the baseline ISA of the target, so it runs on
//! any CPU of the architecture). When wasmtime cannot compile for the target here (a cross-compile to another
//! architecture: this build of wasmtime carries only the build machine's backend), the build stops with
//! what to do; with the `compiler` feature the artifact is left empty instead, cargo prints a warning, and
//! the binary compiles the core in memory at every start, saying so on stderr.

#[allow(dead_code, unreachable_pub)] // the build script uses only `precompile`
#[path = "src/engine/config.rs"]
mod config;

use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let component = std::env::var_os("BATON_COMPONENT")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../target/baton-core.component.wasm"));
    println!("cargo:rerun-if-env-changed=BATON_COMPONENT");
    println!("cargo:rerun-if-changed={}", component.display());
    let bytes = std::fs::read(&component).unwrap_or_else(|e| {
        panic!(
            "cannot read the core component {} ({e}): run `bash scripts/build-wasm.sh` first (or set BATON_COMPONENT)",
            component.display()
        )
    });
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    write(&out.join("baton-core.component.wasm"), &bytes);

    let target = std::env::var("TARGET").expect("cargo sets TARGET");
    println!("cargo:rustc-env=BATON_TARGET={target}"); // the engine's tests precompile for it too
    let artifact = match cached_precompile(&bytes, &target, &out) {
        Ok(artifact) => artifact,
        // With the `compiler` feature the binary carries Cranelift and compiles the core at every start.
        Err(e) if std::env::var_os("CARGO_FEATURE_COMPILER").is_some() => {
            println!(
                "cargo:warning=cannot precompile the core for {target} ({e}); this `baton` will compile it in memory at every start"
            );
            Vec::new()
        }
        Err(e) => panic!(
            "cannot precompile the core for {target} ({e}): build baton on a machine of that architecture, or with `--features compiler` (the binary then compiles the core in memory at every start)"
        ),
    };
    write(&out.join("baton-core.cwasm"), &artifact);
}

/// [`precompile`], shared by every profile of one target directory: the debug and the release builds
/// (and the test-faults one) embed the same machine code, since it depends only on the component's bytes,
/// the target and wasmtime's version and settings, not on how wasmtime itself was optimised. Compiling it
/// takes tens of seconds with the build script's unoptimised wasmtime, twice in every cold CI run without
/// this. The cache lives in `<target dir>/precompiled/`, is keyed by a hash of all of that, and is only ever
/// read by this build script (the binary reads no compiled code from disk); without a target directory
/// above `OUT_DIR` nothing is cached.
fn cached_precompile(component: &[u8], target: &str, out: &Path) -> Result<Vec<u8>, String> {
    use std::hash::{Hash, Hasher};
    let config = config::precompile(target).map_err(|e| format!("{e:#}"))?;
    let engine = wasmtime::Engine::new(&config).map_err(|e| format!("{e:#}"))?;
    // `DefaultHasher::new()` has fixed keys: the same key in every build of one toolchain.
    let mut h = std::collections::hash_map::DefaultHasher::new();
    component.hash(&mut h);
    target.hash(&mut h);
    engine.precompile_compatibility_hash().hash(&mut h);
    let key = format!("{:016x}-{}.cwasm", h.finish(), component.len());
    // OUT_DIR is <target dir>/<profile or target/profile>/build/<pkg>-<hash>/out.
    let dir = out.ancestors().find(|p| p.join("CACHEDIR.TAG").is_file()).map(|t| t.join("precompiled"));
    if let Some(cached) = dir.as_ref().and_then(|d| std::fs::read(d.join(&key)).ok()) {
        return Ok(cached);
    }
    let artifact = engine.precompile_component(component).map_err(|e| format!("{e:#}"))?;
    if let Some(d) = dir {
        // A cache that cannot be written only costs the next build the compile.
        let tmp = d.join(format!("{key}.{}.tmp", std::process::id()));
        if std::fs::create_dir_all(&d).is_ok() && std::fs::write(&tmp, &artifact).is_ok() {
            let _ = std::fs::rename(&tmp, d.join(&key));
        }
    }
    Ok(artifact)
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}
