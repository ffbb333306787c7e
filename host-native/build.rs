//! Embeds the core component (built by `scripts/build-wasm.sh`) into the `baton` binary.

use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let component = std::env::var_os("BATON_COMPONENT")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../target/baton-core.component.wasm"));
    println!("cargo:rerun-if-env-changed=BATON_COMPONENT");
    println!("cargo:rerun-if-changed={}", component.display());
    if !component.exists() {
        panic!(
            "the core component {} does not exist: run `bash scripts/build-wasm.sh` first (or set BATON_COMPONENT)",
            component.display()
        );
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("baton-core.component.wasm");
    std::fs::copy(&component, &out).expect("copy the component into OUT_DIR");
}
