//! The embedded core run in place: the precompiled core ([`super::PRECOMPILED`]'s bytes) is linked into the
//! binary's executable text, page-aligned, and wasmtime runs its code from there (`deserialize_raw` with a
//! code memory that has nothing to publish). The loader maps those pages read-only and executable like the
//! rest of the binary and the kernel faults in only what a command runs, so a start copies nothing: the
//! copying load ([`Component::deserialize`]) spent most of `baton scope`'s cold start moving 2.3 MB into
//! fresh executable memory. Same bytes, same checks (wasmtime validates version, target, settings and CPU
//! features first); when it refuses, [`super::embedded`] falls back to the copying load.

use super::config;
use std::ptr::NonNull;
use std::sync::Arc;
use wasmtime::component::Component;
use wasmtime::{CustomCodeMemory, Engine};

/// Page-aligned bytes, so that wasmtime's text section inside them starts on a page as it requires.
#[repr(C, align(4096))]
struct PageAligned<T: ?Sized>(T);

/// The precompiled core, in the binary's executable text (`.text.*` output sections are mapped R+X).
#[allow(unsafe_code)]
#[unsafe(link_section = ".text.baton_core_precompiled")]
static IN_TEXT: PageAligned<[u8; include_bytes!(concat!(env!("OUT_DIR"), "/baton-core.cwasm")).len()]> =
    PageAligned(*include_bytes!(concat!(env!("OUT_DIR"), "/baton-core.cwasm")));

/// Code memory for code that is executable already: publishing (and unpublishing, on drop) checks that
/// the range lies in [`IN_TEXT`] and changes nothing; anything else (wasmtime never asks for it on this
/// path) is refused.
struct AlreadyExecutable;

impl AlreadyExecutable {
    fn inside(ptr: *const u8, len: usize) -> bool {
        let start = IN_TEXT.0.as_ptr() as usize;
        let (p, end) = (ptr as usize, start + IN_TEXT.0.len());
        p >= start && p.checked_add(len).is_some_and(|e| e <= end)
    }
}

impl CustomCodeMemory for AlreadyExecutable {
    fn required_alignment(&self) -> usize {
        4096
    }

    fn publish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
        if Self::inside(ptr, len) { Ok(()) } else { Err(wasmtime::Error::msg("code outside the embedded core")) }
    }

    /// Called when the component is dropped: the pages stay as the loader mapped them (they are never
    /// reused or written), so there is nothing to restore.
    fn unpublish_executable(&self, ptr: *const u8, len: usize) -> wasmtime::Result<()> {
        if Self::inside(ptr, len) { Ok(()) } else { Err(wasmtime::Error::msg("code outside the embedded core")) }
    }
}

/// The engine and the embedded core running in place, or why wasmtime refused it (the caller then loads
/// a copy, or compiles).
#[allow(unsafe_code)]
pub(super) fn load() -> Result<(Engine, Component), String> {
    if IN_TEXT.0.is_empty() {
        return Err("no precompiled core".into());
    }
    let mut cfg = config::run();
    cfg.with_custom_code_memory(Some(Arc::new(AlreadyExecutable)));
    let engine = Engine::new(&cfg).map_err(|e| format!("{e:#}"))?;
    let memory = NonNull::from(&IN_TEXT.0[..]);
    // SAFETY: `IN_TEXT` holds exactly the output of `precompile_component` that `build.rs` made from
    // `COMPONENT` with this wasmtime version (as `PRECOMPILED` does); it is a static in the binary's
    // read-only executable image, so it lives as long as the process and is never modified. wasmtime
    // checks version, target, settings and CPU features before running anything.
    let component = unsafe { Component::deserialize_raw(&engine, memory) }.map_err(|e| format!("{e:#}"))?;
    Ok((engine, component))
}
