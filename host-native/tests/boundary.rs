//! No panic crosses the wasm boundary: every function of the core component, called through wasmtime with
//! malformed, odd and random inputs, answers with a value (an answer, or an `error` record whose code is one
//! of the core's `error-codes`), never a trap, and answers exactly as the native core does.
//!
//! The typed interfaces take the requests of the fuzz corpus read as the core's request types
//! (`fuzz/corpus/invoke_any/`, `op\nrequest`, a fixed list of malformed requests, and
//! `BATON_BOUNDARY_CASES` (default 1500) seeded mutations of them, `core/tests/fuzz_bodies/inputs.rs`); the
//! lock transactions, the lease and the run resource take odd cells, names, times and TTLs.
//!
//! The parameterless and `decisions` calls go through wasmtime's dynamic component API, so a trap is seen as
//! what it is (a `wasmtime::Trap` in the call's error) rather than as a host error; the control test shows
//! that a component which traps is reported so.

#[path = "../../core/tests/fuzz_bodies/mod.rs"]
mod fuzz_bodies;
#[allow(dead_code)]
#[path = "../../core/tests/fuzz_bodies/inputs.rs"]
mod inputs;
#[allow(dead_code)]
#[path = "../../core/tests/sim/rng.rs"]
mod rng;
#[allow(dead_code)]
mod typed_commands;
#[allow(dead_code)]
mod typed_stores;

use baton_core::api::invoke;
use baton_native::engine::{COMPONENT, CoreComponent};

mod convert;
use serde_json::Value;
use std::sync::OnceLock;
use wasmtime::component::{Component, ComponentExportIndex, Instance, Linker, Val};
use wasmtime::{Config, Engine, Store, Trap};

/// The WIT interface every operation is exported from.
const INTERFACE: &str = "baton:core/decisions@0.2.0";

/// A component instance called through wasmtime's dynamic API. A trap poisons an instance, so the next
/// call after a trap instantiates afresh.
struct Boundary {
    engine: Engine,
    component: Component,
    store: Store<()>,
    instance: Instance,
}

impl Boundary {
    fn new(bytes: &[u8]) -> Self {
        let engine = Engine::new(&Config::new()).expect("an engine");
        let component = Component::new(&engine, bytes).expect("the component compiles");
        Self::with(engine, component)
    }

    /// The core component, compiled once per test binary (a debug wasmtime takes seconds to compile it).
    fn core() -> Self {
        static COMPILED: OnceLock<(Engine, Component)> = OnceLock::new();
        let (engine, component) = COMPILED.get_or_init(|| {
            let engine = Engine::new(&Config::new()).expect("an engine");
            let component = Component::new(&engine, COMPONENT).expect("the core component compiles");
            (engine, component)
        });
        Self::with(engine.clone(), component.clone())
    }

    fn with(engine: Engine, component: Component) -> Self {
        let (store, instance) = Self::instantiate(&engine, &component);
        Self { engine, component, store, instance }
    }

    fn instantiate(engine: &Engine, component: &Component) -> (Store<()>, Instance) {
        let mut store = Store::new(engine, ());
        let instance = Linker::new(engine).instantiate(&mut store, component).expect("instantiates with no imports");
        (store, instance)
    }

    fn func_index(&mut self, name: &str) -> ComponentExportIndex {
        let iface = self.instance.get_export_index(&mut self.store, None, INTERFACE);
        self.instance
            .get_export_index(&mut self.store, iface.as_ref(), name)
            .or_else(|| self.instance.get_export_index(&mut self.store, None, name))
            .unwrap_or_else(|| panic!("the component exports `{name}`"))
    }

    /// Calls export `name` with `params`; the single result, or the trap.
    fn call(&mut self, name: &str, params: &[Val]) -> Result<Val, String> {
        let index = self.func_index(name);
        let func = self.instance.get_func(&mut self.store, index).expect("an exported function");
        let mut results = [Val::Bool(false)];
        match func.call(&mut self.store, params, &mut results) {
            Ok(()) => Ok(results[0].clone()),
            Err(e) => {
                let what = match e.downcast_ref::<Trap>() {
                    Some(trap) => format!("trap {trap:?}: {e:?}"),
                    None => format!("wasmtime error: {e:?}"),
                };
                (self.store, self.instance) = Self::instantiate(&self.engine, &self.component);
                Err(what)
            }
        }
    }
}

/// Requests no operation accepts, and some that only some accept.
const MALFORMED: [&str; 14] = [
    "",
    " ",
    "{",
    "}",
    "null",
    "[]",
    "{}",
    "\"x\"",
    "{\"cell\":1}",
    "{\"cell\":{\"env\":\"..\",\"scope\":\"/\",\"files\":{\"lock.json\":\"{\"}}}",
    "{\"env\":\"\\u0000\",\"scope\":\"..\"}",
    "{\"text\":\"\\ud800\",\"place\":1}",
    "{\"nowMs\":1e400,\"ttlMs\":-1,\"epoch\":18446744073709551616}",
    "\u{feff}{}",
];

fn error_codes(b: &mut Boundary) -> Vec<String> {
    let Ok(Val::List(list)) = b.call("error-codes", &[]) else { panic!("error-codes answers a list") };
    list.into_iter()
        .map(|info| {
            let Val::Record(fields) = info else { panic!("an error-info record") };
            match fields.into_iter().find(|(n, _)| n == "name") {
                Some((_, Val::String(name))) => name,
                other => panic!("error-info name: {other:?}"),
            }
        })
        .collect()
}

/// The requests every boundary test feeds: the malformed ones, the fuzz corpus's (whatever op they were
/// meant for), then `BATON_BOUNDARY_CASES` seeded mutations, each with the op it names.
fn requests(ops: &[&str]) -> Vec<(String, String)> {
    let corpus = inputs::corpus("invoke_any");
    let mut all = Vec::new();
    for op in ops {
        for request in
            MALFORMED.iter().map(|s| (*s).to_owned()).chain(corpus.iter().map(|(_, d)| fuzz_bodies::op_request(d).1))
        {
            all.push(((*op).to_owned(), request));
        }
    }
    let cases: u64 = std::env::var("BATON_BOUNDARY_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(1500);
    let mut rng = rng::Rng::new(std::env::var("BATON_FUZZ_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(0), 11);
    for _ in 0..cases {
        let (op, request) = fuzz_bodies::op_request(&inputs::mutate(&mut rng, &corpus));
        if ops.contains(&op.as_str()) {
            all.push((op, request));
        }
    }
    all
}

type TypedAnswer = Option<Result<String, baton_native::error::HostError>>;

/// Feeds every request of `ops` (see [`requests`]) to `typed` and asserts each is answered without a trap,
/// exactly as the native core's JSON operation answers it (the same answer text, or the same code and
/// message; a request the core's type refuses is `INTERNAL` on both sides). Answers the number of calls.
fn typed_like_native(ops: &[&str], mut typed: impl FnMut(&mut CoreComponent, &str, &str) -> TypedAnswer) -> usize {
    let mut core = CoreComponent::load().expect("the component loads");
    let mut calls = 0;
    for (op, request) in requests(ops) {
        let answer = typed(&mut core, &op, &request).unwrap_or_else(|| panic!("`{op}` is a typed operation"));
        match (answer, invoke(&op, &request)) {
            (Ok(a), Ok(n)) => assert_eq!(a, n, "`{op}` answers {request:?} like the native core"),
            (Err(e), Err(n)) if e.code == "INTERNAL" && n.code.as_str() == "INTERNAL" => {
                assert!(!e.message.contains("the core component failed"), "`{op}` trapped on {request:?}: {e:?}");
            }
            (Err(e), Err(n)) => {
                assert_eq!(
                    (e.code.as_str(), e.message.as_str()),
                    (n.code.as_str(), n.message.as_str()),
                    "`{op}` on {request:?}"
                );
            }
            (typed, native) => panic!("`{op}` on {request:?}: typed {typed:?}, native {native:?}"),
        }
        calls += 1;
    }
    calls
}

/// The `stores` functions are typed: every request of the other tests, read as the core's request type
/// and converted to the WIT types (`typed_stores`), is answered through the typed interface as the native
/// core answers it.
#[test]
fn no_input_makes_a_store_building_block_trap() {
    let calls = typed_like_native(&typed_stores::OPS, typed_stores::answer);
    println!("boundary: {calls} typed stores calls, no trap");
    assert!(calls > 1000, "{calls} calls");
}

/// The `commands` functions (and the fence check and fenced write through `locks.apply`) likewise
/// (`typed_commands`).
#[test]
fn no_input_makes_a_command_decision_trap() {
    let calls = typed_like_native(&typed_commands::OPS, typed_commands::answer);
    println!("boundary: {calls} typed commands calls, no trap");
    assert!(calls > 300, "{calls} calls");
}

#[test]
fn no_input_makes_the_component_trap() {
    let mut b = Boundary::core();
    let codes = error_codes(&mut b);
    assert_eq!(codes.len(), baton_core::ErrorCode::ALL.len());
    let mut calls = 0;
    // `decisions`: typed, parameterless or on names.
    for branch in ["", "main", "feat/x", "\u{0}", "é", &"x".repeat(10_000)] {
        for pr in [None, Some(0), Some(u64::MAX)] {
            let params = [
                Val::String(branch.into()),
                Val::Option(pr.map(|n| Box::new(Val::U64(n)))),
                Val::Option(Some(Box::new(Val::String(branch.into())))),
            ];
            let scope = b.call("scope-for", &params).unwrap_or_else(|t| panic!("scope-for trapped: {t}"));
            assert_eq!(scope, Val::String(baton_core::scope::scope_for(branch, pr, Some(branch))));
            calls += 1;
        }
    }
    assert!(matches!(b.call("cell-files", &[]), Ok(Val::List(_))));
    println!("boundary: {calls} calls across the component boundary, no trap");
    assert_eq!(calls, 6 * 3);
}

/// The typed interfaces take no text to parse, so the inputs are odd values: cells whose files are not
/// what baton writes, empty and huge names, extreme times and TTLs. Each `locks.apply` answers as the
/// native core's `apply_lock_op` does, and the lease resource takes extreme configurations and results
/// without a trap.
#[test]
#[allow(clippy::result_large_err)] // the WIT error record, as the generated bindings give it
fn no_input_makes_a_lease_or_a_lock_transaction_trap() {
    use baton_core::typed::{LockOp, apply_lock_op};
    let mut core = CoreComponent::load().expect("the component loads");
    let files: [&[(&str, &str)]; 6] = [
        &[],
        &[("lock.json", "{")],
        &[("lock.json", "{\"holder\":\"h\",\"expiresAt\":\"not a time\",\"epoch\":1}")],
        &[(
            "lock.json",
            "{\"holder\":\"h\",\"expiresAt\":\"2026-10-10T12:00:00.000Z\",\"epoch\":18446744073709551615}",
        )],
        &[("epoch.json", "[]"), ("lock.json", "{\"version\":2}")],
        &[("lock.json", "{\"holder\":\"\",\"expiresAt\":\"9999-12-31T23:59:59.999Z\",\"x\":{\"y\":[1]}}")],
    ];
    let long = "h".repeat(10_000);
    let holders = ["", "h", long.as_str(), "\u{0}"];
    let mut calls = 0;
    for files in files {
        for holder in holders {
            let cell = baton_core::cell::Cell {
                env: "preview".into(),
                scope: "pr-1".into(),
                files: files.iter().map(|(n, c)| ((*n).to_owned(), (*c).to_owned())).collect(),
                label: None,
            };
            let ops = [
                LockOp::LockAcquire { holder: holder.into(), ttl_ms: u64::MAX, label: Some(holder.into()) },
                LockOp::LockRenew { holder: holder.into(), epoch: u64::MAX, ttl_ms: 0 },
                LockOp::LockRelease { holder: holder.into(), epoch: None },
                LockOp::LockRead {},
                LockOp::LockBreak { holder: holder.into(), ttl_ms: 1, reason: holder.into() },
                LockOp::FenceCheck { holder: holder.into(), epoch: 1 },
                LockOp::FencedWrite { holder: holder.into(), epoch: 1, file: holder.into(), content: holder.into() },
            ];
            for now in [i64::MIN, 0, 1_790_000_000_000, i64::MAX] {
                for op in &ops {
                    let wit = core
                        .lock_apply(&convert::cell_out(cell.clone()), now, &convert::lock_op_out(op.clone()))
                        .unwrap_or_else(|e| panic!("locks.apply trapped on {op:?}: {e:?}"));
                    let native = apply_lock_op(&cell, now, op);
                    let wit = wit.map(convert::lock_answer_back).map_err(convert::error_back);
                    assert_eq!(wit, native, "{op:?} at {now}");
                    calls += 1;
                }
            }
        }
    }
    for (ttl, margin) in [(0, None), (u64::MAX, None), (1_000, Some(5_000)), (3, Some(1)), (900_000, None)] {
        let mut config = baton_core::lease::LeaseConfig::new("preview", "pr-1", "h");
        (config.ttl_ms, config.margin_ms) = (ttl, margin);
        let Ok(lease) = core.lease_create(&convert::lease_config_out(config)) else { continue };
        let answer = apply_lock_op(
            &baton_core::cell::Cell::default(),
            0,
            &LockOp::LockAcquire { holder: "h".into(), ttl_ms: 1, label: None },
        );
        let odd = convert::error(baton_core::CoreError::internal("x"));
        core.lease_acquire(&lease, 0).expect("acquire");
        for (id, outcome) in [(1, answer.clone().map(convert::lock_answer).map_err(convert::error)), (99, Err(odd))] {
            let _ = core.lease_store_result(&lease, id, &outcome, u64::MAX / 2);
            calls += 1;
        }
        core.lease_timeout(&lease, u64::MAX).expect("timeout");
        while core.lease_poll_action(&lease).expect("poll").is_some() {}
        core.lease_fencing_token(&lease, u64::MAX).expect("token");
        core.lease_release(&lease, u64::MAX).expect("release");
        core.lease_drop(lease).expect("drop");
    }
    println!("boundary: {calls} typed calls, no trap");
}

/// Negative control: a component that panics (traps with `unreachable`, as a panic does under
/// `panic = "abort"`) is classified as a trap, so the tests above would fail on one.
#[test]
fn a_trapping_component_is_seen_as_a_trap() {
    let wat = format!(
        r#"(component
            (core module $m
                (memory (export "mem") 1)
                (func (export "f") (param i32 i32) (result i32) unreachable)
                (func (export "realloc") (param i32 i32 i32 i32) (result i32) i32.const 0))
            (core instance $i (instantiate $m))
            (func $f (param "request" string) (result string)
                (canon lift (core func $i "f") (memory (core memory $i "mem")) (realloc (core func $i "realloc"))))
            (instance $decisions (export "store-spec" (func $f)))
            (export "{INTERFACE}" (instance $decisions)))"#
    );
    let bytes = wat::parse_str(&wat).expect("valid WAT");
    let mut b = Boundary::new(&bytes);
    let what = b.call("store-spec", &[Val::String("{}".into())]).expect_err("a trap is seen as a trap");
    assert!(what.contains("UnreachableCodeReached"), "{what}");
    // After a trap the instance is replaced, and the next call traps again rather than reusing a poisoned one.
    assert!(b.call("store-spec", &[Val::String("{}".into())]).is_err());
}

/// The run machine's receipt steps (the grant with the checkpoint receipt, the final receipt with the
/// release) are decided inside the run resource's `apply`, so that is where the odd cells go: files that are
/// not what baton writes, a receipt of another version, a ledger of the wrong shape, a huge file. Each
/// `apply` of the grant, and of the final receipt after a clean grant, answers as the native machine's.
#[test]
#[allow(clippy::result_large_err)] // the WIT error record, as the generated bindings give it
fn no_cell_makes_a_run_step_trap() {
    use baton_core::run::{RunConfig, RunMachine};
    use baton_core::typed::{RunAction, run_poll_action};
    use baton_native::engine::wit::runs as wr;
    use serde_json::json;
    let config: RunConfig = serde_json::from_value(json!({
        "job": "run", "context": { "env": "preview", "scope": "main", "branch": "main" },
        "random": "0123456789abcdef0123456789abcdef0123456789",
    }))
    .expect("a run configuration");
    let huge = "x".repeat(100_000);
    let odd: [&[(&str, &str)]; 8] = [
        &[],
        &[("latest.json", "{")],
        &[("latest.json", "{\"version\":99}")],
        &[("latest.json", "{\"version\":2,\"resources\":7}")],
        &[("latest.json", huge.as_str())],
        &[("lock.json", "{\"holder\":\"h\",\"expiresAt\":\"not a time\",\"epoch\":1}")],
        &[("epoch.json", "[]"), ("history.json", "{}")],
        &[("latest.json", "{\"version\":2,\"hashKey\":\"\\u0000\",\"context\":[]}")],
    ];
    let cell = |files: &[(&str, &str)]| {
        let files: serde_json::Map<String, Value> = files.iter().map(|(n, c)| ((*n).into(), (*c).into())).collect();
        json!({ "env": "preview", "scope": "main", "files": files })
    };
    let now = 1_790_000_000_000_i64;
    let mut core = CoreComponent::load().expect("the component loads");
    let mut calls = 0;
    // The store action of each side, after `advance` (which settles the grant on a clean cell when asked).
    for finish in [false, true] {
        for files in odd {
            let mut native = RunMachine::new(config.clone()).expect("a native run");
            let run = core.run_create(&convert::run_config_out(config.clone())).expect("a component run");
            native.start(0).expect("starts");
            core.run_start(&run, 0).expect("starts");
            let next = |native: &mut RunMachine, core: &mut CoreComponent| {
                let n = std::iter::from_fn(|| run_poll_action(native)).find_map(|a| match a {
                    RunAction::Store(s) => Some(s.id),
                    _ => None,
                });
                let c = std::iter::from_fn(|| core.run_poll_action(&run).expect("polls")).find_map(|a| match a {
                    wr::RunAction::Store(s) => Some(s.id),
                    _ => None,
                });
                assert_eq!(n, c, "both runs ask for the same store action");
                n.expect("a store action")
            };
            let mut id = next(&mut native, &mut core);
            if finish {
                let clean: baton_core::cell::Cell = serde_json::from_value(cell(&[])).expect("a cell");
                baton_core::api::run_apply(&mut native, id, &clean, now).expect("a clean grant");
                core.run_apply(&run, id, &baton_native::engine::cell_of(&cell(&[])), now).unwrap().expect("granted");
                native.handle_store_outcome(id, Ok(()), 1).expect("settles");
                core.run_store_outcome(&run, id, Ok(()), 1).expect("settles");
                let end = baton_core::run::WorkEnd::Exited { code: 0 };
                core.run_work_ended(&run, &convert::work_end_out(end.clone()), 2).expect("ends");
                native.work_ended(end, 2).expect("ends");
                id = next(&mut native, &mut core);
            }
            let odd_cell = cell(files);
            let n =
                baton_core::api::run_apply(&mut native, id, &serde_json::from_value(odd_cell.clone()).unwrap(), now);
            let c = core.run_apply(&run, id, &baton_native::engine::cell_of(&odd_cell), now);
            let c = c.unwrap_or_else(|e| panic!("`apply` trapped on {files:?}: {e:?}"));
            match (n, c) {
                (Ok(n), Ok(c)) => {
                    let c: Vec<Value> = c.iter().map(baton_native::engine::change_json).collect();
                    assert_eq!(serde_json::to_value(n).unwrap(), Value::Array(c), "changes on {files:?}");
                }
                (Err(n), Err(c)) => assert_eq!(
                    (n.code.as_str(), n.message.as_str()),
                    (baton_native::engine::code_name(c.code), c.message.as_str()),
                    "refusal on {files:?}"
                ),
                (n, c) => panic!("on {files:?}: native {n:?}, component {c:?}"),
            }
            core.run_drop(run).expect("drops");
            calls += 1;
        }
    }
    assert_eq!(calls, 16);
}
