//! The core component in wasmtime: every decision of the `baton` binary goes through here.
//!
//! The component bytes are embedded in the binary. Compiling them takes tens of milliseconds, so the
//! compiled artifact is cached on disk (`$BATON_CACHE_DIR`, else `$XDG_CACHE_HOME/baton`, else
//! `~/.cache/baton`), keyed by a hash of the component and of the engine configuration; a repeated
//! `baton scope` then only maps the cached file (well under a millisecond).

use crate::error::HostError;
use serde_json::Value;
use std::hash::{Hash, Hasher};
use std::path::PathBuf;
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Config, Engine, Store};

mod bindings {
    #![allow(missing_docs, unreachable_pub)] // generated from wit/baton.wit
    wasmtime::component::bindgen!({ world: "core", path: "../wit" });
}

use bindings::Core;
use bindings::exports::baton::core::decisions::Error as WitError;

/// The component bytes this binary was built with.
pub const COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/baton-core.component.wasm"));

/// A loaded, instantiated core. Cheap to call (a few microseconds per decision).
pub struct CoreComponent {
    store: Store<()>,
    core: Core,
}

impl CoreComponent {
    /// Loads the embedded component, from the compile cache when possible.
    pub fn load() -> Result<Self, HostError> {
        Self::from_bytes(COMPONENT)
    }

    /// Loads a component from `bytes` (tests load the file built by `scripts/build-wasm.sh`).
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, HostError> {
        let engine = Engine::new(&Config::new()).map_err(wasm_error)?;
        let component = load_cached(&engine, bytes)?;
        // The world has no imports, so an empty linker instantiates it; anything else fails here.
        let linker = Linker::new(&engine);
        let mut store = Store::new(&engine, ());
        let core = Core::instantiate(&mut store, &component, &linker).map_err(wasm_error)?;
        Ok(Self { store, core })
    }

    /// Runs core operation `op` (see `baton_core::api::OPS`) on a JSON request.
    ///
    /// A refusal of the core comes back as a [`HostError`] carrying the core's code and details.
    pub fn invoke(&mut self, op: &str, request: &Value) -> Result<Value, HostError> {
        let text = self.invoke_text(op, request)?;
        serde_json::from_str(&text)
            .map_err(|e| HostError::internal(format!("the core answered `{op}` with invalid JSON: {e}")))
    }

    /// [`Self::invoke`] without parsing the answer: JSON text in the core's format.
    pub fn invoke_text(&mut self, op: &str, request: &Value) -> Result<String, HostError> {
        let req = request.to_string();
        let d = self.core.baton_core_decisions();
        let s = &mut self.store;
        let answer = match op {
            "scope-for" => {
                let field = |k: &str| request.get(k).and_then(Value::as_str);
                let pr = request.get("pr").and_then(Value::as_u64);
                let scope = d
                    .call_scope_for(s, field("branch").unwrap_or_default(), pr, field("defaultBranch"))
                    .map_err(wasm_error)?;
                return Ok(serde_json::json!({ "scope": scope }).to_string());
            }
            "error-codes" => {
                let codes = d.call_error_codes(s).map_err(wasm_error)?;
                let list =
                    codes.into_iter().map(|c| serde_json::json!({ "code": c.name, "exit": c.exit, "hint": c.hint }));
                return Ok(Value::Array(list.collect()).to_string());
            }
            "cell-files" => {
                return Ok(serde_json::json!(d.call_cell_files(s).map_err(wasm_error)?).to_string());
            }
            "cell-path" => d.call_cell_path(s, &req),
            "scope-names" => d.call_scope_names(s, &req),
            "store-spec" => d.call_store_spec(s, &req),
            "detect-context" => d.call_detect_context(s, &req),
            "lock-acquire" => d.call_lock_acquire(s, &req),
            "lock-renew" => d.call_lock_renew(s, &req),
            "lock-release" => d.call_lock_release(s, &req),
            "lock-read" => d.call_lock_read(s, &req),
            "lock-break" => d.call_lock_break(s, &req),
            "fence-check" => d.call_fence_check(s, &req),
            "fenced-write" => d.call_fenced_write(s, &req),
            "succession" => d.call_succession(s, &req),
            "parent-cell" => d.call_parent_cell(s, &req),
            "approval" => d.call_approval(s, &req),
            "run-begin" => d.call_run_begin(s, &req),
            "run-finish" => d.call_run_finish(s, &req),
            "ledger-intend" => d.call_ledger_intend(s, &req),
            "ledger-record" => d.call_ledger_record(s, &req),
            "ledger-forget" => d.call_ledger_forget(s, &req),
            "ledger-check" => d.call_ledger_check(s, &req),
            "handover" => d.call_handover(s, &req),
            "destroy-plan" => d.call_destroy_plan(s, &req),
            "scope-status" => d.call_scope_status(s, &req),
            "receipt-parse" => d.call_receipt_parse(s, &req),
            "git-push-outcome" => d.call_git_push_outcome(s, &req),
            "git-retry" => d.call_git_retry(s, &req),
            "git-readme" => d.call_git_readme(s, &req),
            "redact" => d.call_redact(s, &req),
            "render" => d.call_render(s, &req),
            "store-deadline" => d.call_store_deadline(s, &req),
            "git-clone-name" => d.call_git_clone_name(s, &req),
            "git-stale-clones" => d.call_git_stale_clones(s, &req),
            "git-commit" => d.call_git_commit(s, &req),
            "git-cat-parse" => d.call_git_cat_parse(s, &req),
            other => {
                return Err(HostError::internal(format!("the component has no operation `{other}`")));
            }
        }
        .map_err(wasm_error)?;
        answer.map_err(from_wit)
    }

    /// `scope-for` through its typed WIT function.
    pub fn scope_for(
        &mut self,
        branch: &str,
        pr: Option<u64>,
        default_branch: Option<&str>,
    ) -> Result<String, HostError> {
        self.core.baton_core_decisions().call_scope_for(&mut self.store, branch, pr, default_branch).map_err(wasm_error)
    }

    /// The names of the cell files a store loads into a snapshot.
    pub fn cell_files(&mut self) -> Result<Vec<String>, HostError> {
        self.core.baton_core_decisions().call_cell_files(&mut self.store).map_err(wasm_error)
    }
}

/// The names of everything a component imports (the core must import nothing).
pub fn imports_of(bytes: &[u8]) -> Result<Vec<String>, HostError> {
    let engine = Engine::new(&Config::new()).map_err(wasm_error)?;
    let component = Component::new(&engine, bytes).map_err(wasm_error)?;
    Ok(component.component_type().imports(&engine).map(|(name, _)| name.to_owned()).collect())
}

/// A lease machine living inside the component (the WIT `lease` resource). Drop it with
/// [`CoreComponent::lease_drop`].
#[derive(Debug)]
pub struct LeaseRef(ResourceAny);

impl CoreComponent {
    /// Creates a lease machine from its configuration (`baton_core::lease::LeaseConfig` as JSON).
    pub fn lease_create(&mut self, config: &Value) -> Result<LeaseRef, HostError> {
        let d = self.core.baton_core_decisions();
        let res = d.lease().call_create(&mut self.store, &config.to_string()).map_err(wasm_error)?.map_err(from_wit)?;
        Ok(LeaseRef(res))
    }

    /// Starts acquiring.
    pub fn lease_acquire(&mut self, l: &LeaseRef, now: u64) -> Result<(), HostError> {
        let d = self.core.baton_core_decisions();
        d.lease().call_acquire(&mut self.store, l.0, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Ends the lease.
    pub fn lease_release(&mut self, l: &LeaseRef, now: u64) -> Result<(), HostError> {
        self.core.baton_core_decisions().lease().call_release(&mut self.store, l.0, now).map_err(wasm_error)
    }

    /// Wakes the machine.
    pub fn lease_timeout(&mut self, l: &LeaseRef, now: u64) -> Result<(), HostError> {
        self.core.baton_core_decisions().lease().call_handle_timeout(&mut self.store, l.0, now).map_err(wasm_error)
    }

    /// Reports the outcome of store request `id`: `{"ok": answer}` or `{"error": {...}}`.
    pub fn lease_store_result(&mut self, l: &LeaseRef, id: u64, outcome: &Value, now: u64) -> Result<(), HostError> {
        let d = self.core.baton_core_decisions();
        d.lease()
            .call_handle_store_result(&mut self.store, l.0, id, &outcome.to_string(), now)
            .map_err(wasm_error)?
            .map_err(from_wit)
    }

    /// The next action, parsed.
    pub fn lease_poll_action(&mut self, l: &LeaseRef) -> Result<Option<Value>, HostError> {
        let d = self.core.baton_core_decisions();
        let action = d.lease().call_poll_action(&mut self.store, l.0).map_err(wasm_error)?;
        action
            .map(|a| {
                serde_json::from_str(&a).map_err(|e| HostError::internal(format!("invalid action from the core: {e}")))
            })
            .transpose()
    }

    /// When to wake the machine next.
    pub fn lease_poll_timeout(&mut self, l: &LeaseRef) -> Result<Option<u64>, HostError> {
        self.core.baton_core_decisions().lease().call_poll_timeout(&mut self.store, l.0).map_err(wasm_error)
    }

    /// The epoch to fence writes with, while the lease is safely held at `now`.
    pub fn lease_fencing_token(&mut self, l: &LeaseRef, now: u64) -> Result<Option<u64>, HostError> {
        self.core.baton_core_decisions().lease().call_fencing_token(&mut self.store, l.0, now).map_err(wasm_error)
    }

    /// The latest instant a store operation started at `now` may run until (the machine's `store_deadline`).
    pub fn lease_store_deadline(&mut self, l: &LeaseRef, now: u64) -> Result<u64, HostError> {
        self.core.baton_core_decisions().lease().call_store_deadline(&mut self.store, l.0, now).map_err(wasm_error)
    }

    /// Whether the lease is over.
    pub fn lease_is_finished(&mut self, l: &LeaseRef) -> Result<bool, HostError> {
        self.core.baton_core_decisions().lease().call_is_finished(&mut self.store, l.0).map_err(wasm_error)
    }

    /// Frees the machine inside the component.
    pub fn lease_drop(&mut self, l: LeaseRef) -> Result<(), HostError> {
        l.0.resource_drop(&mut self.store).map_err(wasm_error)
    }
}

fn from_wit(e: WitError) -> HostError {
    match serde_json::from_str::<Value>(&e.json) {
        Ok(Value::Object(obj)) => HostError::from_json(obj),
        _ => HostError::internal(e.message),
    }
}

fn wasm_error(e: wasmtime::Error) -> HostError {
    HostError::internal(format!("the core component failed: {e:#}"))
}

fn cache_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("BATON_CACHE_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("baton"));
    }
    std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|h| PathBuf::from(h).join(".cache/baton"))
}

/// Compiles `bytes`, or maps the artifact a previous process cached. The cache is an optimisation only:
/// any failure to read or write it falls back to compiling.
fn load_cached(engine: &Engine, bytes: &[u8]) -> Result<Component, HostError> {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    bytes.hash(&mut h);
    engine.precompile_compatibility_hash().hash(&mut h);
    let key = format!("core-{:016x}.cwasm", h.finish());
    let path = cache_dir().map(|d| d.join(key));
    if let Some(path) = &path
        && path.exists()
        && let Ok(c) = deserialize(engine, path)
    {
        return Ok(c);
    }
    let component = Component::new(engine, bytes).map_err(wasm_error)?;
    if let Some(path) = &path
        && let Ok(art) = component.serialize()
        && let Some(dir) = path.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let tmp = path.with_extension(format!("{}.tmp", std::process::id()));
        if std::fs::write(&tmp, art).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
        let _ = std::fs::remove_file(&tmp);
    }
    Ok(component)
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &std::path::Path) -> wasmtime::Result<Component> {
    // SAFETY: the file was written by `Component::serialize` of this very binary (the key hashes the
    // component bytes and the engine's compatibility hash, and it is written atomically into the user's own
    // cache directory); wasmtime also checks the header and refuses an incompatible artifact.
    unsafe { Component::deserialize_file(engine, path) }
}
