//! The core component in wasmtime: every decision of the `baton` binary goes through here.
//!
//! The binary carries the component and the machine code wasmtime compiled from it at build time
//! (`build.rs`, for the target's baseline ISA, see [`config`]). [`CoreComponent::load`] loads that code from
//! the binary's own read-only image; nothing compiled is ever read from or written to disk. Should wasmtime
//! refuse the embedded code on this machine, the component is compiled in memory instead, with one line on
//! stderr saying so.

pub mod config;
#[cfg(test)]
mod tests;

use crate::error::HostError;
use serde_json::Value;
use std::sync::OnceLock;
use wasmtime::component::{Component, Linker, ResourceAny};
use wasmtime::{Engine, Store};

mod bindings {
    #![allow(missing_docs, unreachable_pub)] // generated from wit/ (world `core`)
    wasmtime::component::bindgen!({ world: "core", path: "../wit" });
}

// ELF only: `.text.*` sections are merged into the executable text by the linker (Mach-O and PE name
// sections differently); elsewhere the copying load below is the only one.
mod commands;
#[cfg(target_os = "linux")]
mod in_place;
mod locks;
mod ownership;
mod run;
mod stores;
pub use commands::scope_report_json;
pub use locks::{
    acquire_op, changes_answer, lock_answer_json, lock_json, lock_json_or_null, lock_view_json, release_op,
};
pub use ownership::ChangeRef;
pub use run::{RunRef, change_json, run_config, run_context};
pub use stores::{cell_of, change_of, code_name, code_of, wit_error};

use bindings::Core;
use bindings::exports::baton::core::types::Error as WitError;
use bindings::exports::baton::core::{leases as wl, locks as wlocks};

/// The generated types of the component's typed interfaces (`wit/types.wit`, `locks.wit`, `lease.wit`,
/// `stores.wit`, `etcd.wit`, `run.wit`, `commands.wit`).
pub mod wit {
    pub use super::bindings::exports::baton::core::{commands, etcd, leases, locks, ownership, runs, stores, types};
}

/// The component bytes this binary was built with.
pub const COMPONENT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/baton-core.component.wasm"));

/// [`COMPONENT`] compiled by `build.rs` with [`config::precompile`] for this binary's target (empty when the
/// build could not compile for it).
pub const PRECOMPILED: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/baton-core.cwasm"));

/// A loaded, instantiated core. Cheap to call (a few microseconds per decision).
pub struct CoreComponent {
    store: Store<()>,
    core: Core,
}

impl CoreComponent {
    /// A fresh instance of the embedded core. The first call in a process loads the precompiled code (or,
    /// if wasmtime refuses it here, compiles the component in memory and says so in one line on stderr);
    /// later calls, from any thread, reuse it and only instantiate (microseconds).
    pub fn load() -> Result<Self, HostError> {
        let (engine, component) = embedded()?;
        Self::instantiate(&engine, &component)
    }

    fn instantiate(engine: &Engine, component: &Component) -> Result<Self, HostError> {
        // The world has no imports, so an empty linker instantiates it; anything else fails here.
        let linker = Linker::new(engine);
        let mut store = Store::new(engine, ());
        let core = Core::instantiate(&mut store, component, &linker).map_err(wasm_error)?;
        Ok(Self { store, core })
    }

    /// `e` with the code and message the core gives an I/O failure: an `INTERNAL` error with an
    /// `errno` detail (see [`HostError::io`]) is asked about; anything else, or a core that cannot answer, leaves
    /// it as it is. Classifying twice changes nothing.
    #[must_use]
    pub fn classify(&mut self, mut e: HostError) -> HostError {
        let Some(errno) = e.details.get("errno").and_then(Value::as_str).filter(|_| e.code == "INTERNAL") else {
            return e;
        };
        let (errno, what) = (errno.to_owned(), e.message.trim_end_matches('.').to_owned());
        if let Ok(answer) = self.io_error(Some(&errno), &what, "") {
            e.code = code_name(answer.code).to_owned();
            e.message = answer.message;
        }
        e
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

    /// Every error code with its JSON name, exit code and hint (`decisions.error-codes`).
    pub fn error_codes(&mut self) -> Result<Vec<wit::types::ErrorInfo>, HostError> {
        self.core.baton_core_decisions().call_error_codes(&mut self.store).map_err(wasm_error)
    }

    /// The names of the cell files a store loads into a snapshot.
    pub fn cell_files(&mut self) -> Result<Vec<String>, HostError> {
        self.core.baton_core_decisions().call_cell_files(&mut self.store).map_err(wasm_error)
    }
}

/// A lease machine living inside the component (the WIT `leases.lease` resource). Drop it with
/// [`CoreComponent::lease_drop`].
#[derive(Debug)]
pub struct LeaseRef(ResourceAny);

/// The typed `leases` interface (the CLI drives its runs with the run machine; the conformance corpus and
/// plugin-host tests drive this).
impl CoreComponent {
    /// Creates a lease machine; `USAGE` for inconsistent timing.
    pub fn lease_create(&mut self, config: &wl::LeaseConfig) -> Result<LeaseRef, HostError> {
        let lease = self.core.baton_core_leases().lease();
        lease.call_create(&mut self.store, config).map_err(wasm_error)?.map_err(from_wit).map(LeaseRef)
    }

    /// Starts acquiring.
    pub fn lease_acquire(&mut self, l: &LeaseRef, now: u64) -> Result<(), HostError> {
        let lease = self.core.baton_core_leases().lease();
        lease.call_acquire(&mut self.store, l.0, now).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Ends the lease.
    pub fn lease_release(&mut self, l: &LeaseRef, now: u64) -> Result<(), HostError> {
        self.core.baton_core_leases().lease().call_release(&mut self.store, l.0, now).map_err(wasm_error)
    }

    /// Wakes the machine.
    pub fn lease_timeout(&mut self, l: &LeaseRef, now: u64) -> Result<(), HostError> {
        self.core.baton_core_leases().lease().call_handle_timeout(&mut self.store, l.0, now).map_err(wasm_error)
    }

    /// Reports the outcome of store request `id`.
    pub fn lease_store_result(
        &mut self,
        l: &LeaseRef,
        id: u64,
        outcome: &Result<wlocks::LockAnswer, WitError>,
        now: u64,
    ) -> Result<(), HostError> {
        let lease = self.core.baton_core_leases().lease();
        lease
            .call_handle_store_result(&mut self.store, l.0, id, outcome.as_ref(), now)
            .map_err(wasm_error)?
            .map_err(from_wit)
    }

    /// The next action.
    pub fn lease_poll_action(&mut self, l: &LeaseRef) -> Result<Option<wl::LeaseAction>, HostError> {
        self.core.baton_core_leases().lease().call_poll_action(&mut self.store, l.0).map_err(wasm_error)
    }

    /// When to wake the machine next.
    pub fn lease_poll_timeout(&mut self, l: &LeaseRef) -> Result<Option<u64>, HostError> {
        self.core.baton_core_leases().lease().call_poll_timeout(&mut self.store, l.0).map_err(wasm_error)
    }

    /// The epoch to fence writes with, while the lease is safely held at `now`.
    pub fn lease_fencing_token(&mut self, l: &LeaseRef, now: u64) -> Result<Option<u64>, HostError> {
        self.core.baton_core_leases().lease().call_fencing_token(&mut self.store, l.0, now).map_err(wasm_error)
    }

    /// The latest instant a store operation started at `now` may run until (the machine's `store_deadline`).
    pub fn lease_store_deadline(&mut self, l: &LeaseRef, now: u64) -> Result<u64, HostError> {
        self.core.baton_core_leases().lease().call_store_deadline(&mut self.store, l.0, now).map_err(wasm_error)
    }

    /// Whether the lease is over.
    pub fn lease_is_finished(&mut self, l: &LeaseRef) -> Result<bool, HostError> {
        self.core.baton_core_leases().lease().call_is_finished(&mut self.store, l.0).map_err(wasm_error)
    }

    /// Frees the machine inside the component.
    pub fn lease_drop(&mut self, l: LeaseRef) -> Result<(), HostError> {
        l.0.resource_drop(&mut self.store).map_err(wasm_error)
    }

    /// Decides the lock transaction `op` on the snapshot `cell` at wall-clock `now_ms` (`locks.apply`).
    pub fn lock_apply(
        &mut self,
        cell: &wit::types::Cell,
        now_ms: i64,
        op: &wlocks::LockOp,
    ) -> Result<Result<wlocks::LockAnswer, WitError>, HostError> {
        self.core.baton_core_locks().call_apply(&mut self.store, cell, now_ms, op).map_err(wasm_error)
    }
}

/// The typed `etcd` interface (`wit/etcd.wit`): the etcd store's decisions without JSON text.
impl CoreComponent {
    /// Where the environment (and the cell) live; `USAGE` for a name that is not valid.
    pub fn etcd_keys(&mut self, request: &wit::etcd::KeysRequest) -> Result<wit::etcd::CellKeys, HostError> {
        self.core.baton_core_etcd().call_keys(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The one transaction that commits a change set on the cell as loaded.
    pub fn etcd_txn(&mut self, request: &wit::etcd::TxnRequest) -> Result<wit::etcd::Transaction, HostError> {
        self.core.baton_core_etcd().call_txn(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }

    /// The cells of an environment in one range read of it.
    pub fn etcd_list(&mut self, request: &wit::etcd::ListRequest) -> Result<Vec<wit::etcd::ListedCell>, HostError> {
        self.core.baton_core_etcd().call_list(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Whether to try a failed etcd request again, or the error that ends its operation.
    pub fn etcd_retry(&mut self, request: &wit::etcd::RetryRequest) -> Result<wit::etcd::RetryDecision, HostError> {
        self.core.baton_core_etcd().call_retry(&mut self.store, request).map_err(wasm_error)?.map_err(from_wit)
    }
}

/// The host error of a core refusal: every fact its `json` carries.
pub fn from_wit(e: WitError) -> HostError {
    match serde_json::from_str::<Value>(&e.json) {
        Ok(Value::Object(obj)) => HostError::from_json(obj),
        _ => HostError::internal(e.message),
    }
}

fn wasm_error(e: wasmtime::Error) -> HostError {
    HostError::internal(format!("the core component failed: {e:#}"))
}

/// The embedded core, loaded once per process (see [`CoreComponent::load`]), for callers that drive it
/// through wasmtime's own API (the boundary tests). Both handles are cheap clones of the process's one copy.
pub fn embedded() -> Result<(Engine, Component), HostError> {
    static EMBEDDED: OnceLock<Result<(Engine, Component), HostError>> = OnceLock::new();
    EMBEDDED
        .get_or_init(|| {
            #[cfg(target_os = "linux")]
            if let Ok(loaded) = in_place::load() {
                return Ok(loaded);
            }
            let engine = Engine::new(&config::run()).map_err(wasm_error)?;
            let (component, refused) = load_embedded(&engine, PRECOMPILED, COMPONENT, COMPILER)?;
            if let Some(why) = refused {
                // As `output::note` prints it (the engine sits below `output`, which renders through it).
                eprintln!("baton: {why}");
            }
            Ok((engine, component))
        })
        .clone()
}

/// Compiles a component in memory (Cranelift).
type Compile = fn(&Engine, &[u8]) -> wasmtime::Result<Component>;

/// How this binary compiles a component in memory when the embedded code cannot run: with Cranelift under
/// the `compiler` feature (and in this crate's own tests), not at all without it.
#[cfg(any(test, feature = "compiler"))]
const COMPILER: Option<Compile> = Some(|engine, bytes| Component::new(engine, bytes));
#[cfg(not(any(test, feature = "compiler")))]
const COMPILER: Option<Compile> = None;

/// The core from `precompiled` (code compiled by `build.rs`, taken from the binary's image), or, when
/// wasmtime refuses it on this machine, `component` compiled in memory with `compile` together with the
/// one-line reason to tell the user; without a compiler, that refusal as an error naming the fix. Never
/// touches the disk.
///
/// `precompiled` is executed: pass only [`PRECOMPILED`] (tests also pass artifacts wasmtime refuses before
/// running anything, and artifacts of `precompile_component`).
fn load_embedded(
    engine: &Engine,
    precompiled: &[u8],
    component: &[u8],
    compile: Option<Compile>,
) -> Result<(Component, Option<String>), HostError> {
    let refused = if precompiled.is_empty() {
        "this build of baton carries no precompiled core (its build could not compile for this target)".to_owned()
    } else {
        match deserialize(engine, precompiled) {
            Ok(c) => return Ok((c, None)),
            Err(e) => format!("the core compiled into this binary cannot run here ({e:#})").replace('\n', " "),
        }
    };
    let Some(compile) = compile else {
        return Err(HostError::internal(format!(
            "{refused}. Build baton on a machine of this architecture (`cargo install --path host-native`), or build it with `--features compiler` to compile the core in memory at every start"
        )));
    };
    let compiled = compile(engine, component).map_err(wasm_error)?;
    Ok((
        compiled,
        Some(format!("{refused}; compiled it in memory instead, which costs tens of milliseconds per start")),
    ))
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, precompiled: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: wasmtime runs these bytes as machine code; they must be the output of `precompile_component`
    // of this wasmtime version. `load` passes only `PRECOMPILED`, which `build.rs` produced that way from
    // `COMPONENT` and which lives in the binary's read-only image, so whoever could change it could change
    // the binary itself (see `load_embedded` for the tests). wasmtime copies it into fresh executable memory and first checks that its version,
    // target, settings and CPU features fit this engine and machine (refusing it otherwise).
    unsafe { Component::deserialize(engine, precompiled) }
}
