//! The store corpus (`tests/stores/*.json`, format in the README there) on every native store: the dir
//! store, the git store on a `file://` bare remote, and the git store through a `git daemon` on a loopback
//! port of its own, and the etcd store on a real etcd of its own. Each handle is its own store object with its own core component, as two processes
//! would be; the Node runner (`host-node/test/store-corpus.test.mjs`) runs the same files.
//!
//! After the corpus, each backend also runs the CLI journey of the former `store_conformance.rs` through
//! `baton` processes: expiry and takeover, the fencing race, receipts written by runs, eight processes
//! racing for one lock, and a git store whose caller's environment names another repository.

#[path = "store_corpus/backend.rs"]
mod backend;
mod common;
#[allow(dead_code)]
mod typed_commands;
mod typed_stores;

mod convert;

use backend::{Daemon, Kind, Location, Place};
use baton_native::engine::CoreComponent;
use baton_native::engine::wit::commands::StoreRequest;
use baton_native::error::HostError;
use baton_native::store::Store;
use common::{GitTemp, TempDir, command, envelope, json_in};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// One store handle: its own store object and core, as another process would have.
struct Handle {
    core: CoreComponent,
    store: Store,
    /// The control only: commit on the snapshot this handle loaded last, as a store without
    /// compare-and-swap would (`env/scope` -> files).
    stale: Option<BTreeMap<String, Value>>,
}

/// One case being run on one backend.
struct Case<'a> {
    at: &'a Location,
    cwd: PathBuf,
    /// A core for the runner's own questions (where a cell lives).
    core: CoreComponent,
    handles: BTreeMap<String, Handle>,
    versions: BTreeMap<String, String>,
    /// The control: every handle commits without compare-and-swap.
    sabotaged: bool,
    env: String,
    scope: String,
}

/// What one step ended with, for comparison.
enum Outcome {
    Ok(Value),
    Committed(String),
    Conflict,
    Failed(HostError),
}

fn corpus() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/stores");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name.clone(), serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}")))
        })
        .collect()
}

/// The version of a snapshot: its state files, canonically ordered.
fn version(files: &Value) -> String {
    let sorted: BTreeMap<&str, &Value> =
        files.as_object().into_iter().flatten().map(|(k, v)| (k.as_str(), v)).collect();
    serde_json::to_string(&sorted).unwrap()
}

/// The files of `files` after `changes` (the core's change format).
fn applied(files: &Value, changes: &Value) -> Value {
    let mut files = files.as_object().cloned().unwrap_or_default();
    for c in changes.as_array().into_iter().flatten() {
        let file = c["file"].as_str().unwrap_or_default().to_owned();
        if c["op"] == "write" {
            files.insert(file, c["content"].clone());
        } else {
            files.remove(&file);
        }
    }
    Value::Object(files)
}

/// `expected` matches `actual`: named keys only for objects, element by element for arrays.
fn matches(expected: &Value, actual: &Value) -> bool {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => e.iter().all(|(k, v)| matches(v, a.get(k).unwrap_or(&Value::Null))),
        (Value::Array(e), Value::Array(a)) => e.len() == a.len() && e.iter().zip(a).all(|(e, a)| matches(e, a)),
        _ => expected == actual,
    }
}

fn hex(text: &str) -> Vec<u8> {
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap()).collect()
}

impl Case<'_> {
    fn open(&self, wait: Option<&str>) -> Result<Handle, HostError> {
        let mut core = CoreComponent::load()?;
        let request = StoreRequest {
            spec: Some(self.at.spec.clone()),
            cwd: self.cwd.display().to_string(),
            mutex_wait_ms: wait.map(str::to_owned),
            etcd: self.at.etcd_vars(),
            repo_root: None,
            prefix: None,
            budget_ms: None,
            run: false,
            ci: false,
            origin: None,
        };
        let store = baton_native::commands::open_spec(&mut core, &request)?;
        Ok(Handle { core, store, stale: self.sabotaged.then(BTreeMap::new) })
    }

    fn handle(&mut self, name: &str) -> &mut Handle {
        if !self.handles.contains_key(name) {
            let h = self.open(None).unwrap_or_else(|e| panic!("cannot open handle {name}: {e}"));
            self.handles.insert(name.to_owned(), h);
        }
        self.handles.get_mut(name).unwrap()
    }

    fn place(&mut self, step: &Value) -> Place {
        let (env, scope) = self.cell(step);
        let raw = step["raw"].as_str();
        let path = self.core.cell_path(&env, if raw.is_some() { "x" } else { &scope }).unwrap();
        self.at.place(&json!({ "dir": path.dir, "ref": path.git_ref }), raw)
    }

    fn cell(&self, step: &Value) -> (String, String) {
        let field = |k: &str, default: &str| step[k].as_str().unwrap_or(default).to_owned();
        (field("env", &self.env), field("scope", &self.scope))
    }

    fn named(&self, name: &str) -> String {
        self.versions.get(name).unwrap_or_else(|| panic!("no version named {name}")).clone()
    }

    /// Runs one step; `Err` says what did not match.
    fn step(&mut self, step: &Value) -> Result<(), String> {
        let (env, scope) = self.cell(step);
        let name = step["handle"].as_str().unwrap_or("a").to_owned();
        let outcome = match step["do"].as_str().unwrap_or_default() {
            "open" => match self.open(step["mutexWaitMs"].as_str()) {
                Ok(h) => {
                    self.handles.insert(name, h);
                    Outcome::Ok(json!({}))
                }
                Err(e) => Outcome::Failed(e),
            },
            "load" => {
                let h = self.handle(&name);
                match h.store.read(&mut h.core, &env, &scope, |_, cell, _| Ok(cell["files"].clone())) {
                    Ok(files) => {
                        if let Some(stale) = &mut h.stale {
                            stale.insert(format!("{env}/{scope}"), files.clone());
                        }
                        return self.check_load(step, &files);
                    }
                    Err(e) => Outcome::Failed(e),
                }
            }
            "commit" => {
                let on = step["on"].as_str().map(|v| self.named(v));
                commit(self.handle(&name), &env, &scope, on.as_deref(), &step["changes"])
            }
            "race" => return self.race(step, &env, &scope),
            "op" => op(self.handle(&name), &env, &scope, step),
            "list" => {
                let h = self.handle(&name);
                match h.store.list(&mut h.core, &env) {
                    Ok(list) => Outcome::Ok(Value::Array(list)),
                    Err(e) => Outcome::Failed(e),
                }
            }
            "put" => {
                let place = self.place(step);
                let files: Vec<(String, Vec<u8>)> = step["files"]
                    .as_object()
                    .unwrap()
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.clone(),
                            v.as_str().map_or_else(|| hex(v["hex"].as_str().unwrap()), |t| t.as_bytes().to_vec()),
                        )
                    })
                    .collect();
                self.at.put(&place, &files);
                return Ok(());
            }
            "remove" => {
                let place = self.place(step);
                self.at.remove(&place);
                return Ok(());
            }
            "peek" => {
                let place = self.place(step);
                let got = self.at.peek(&place, step["file"].as_str().unwrap());
                let got = got.map_or(Value::Null, Value::from);
                return if got == step["expect"] { Ok(()) } else { Err(format!("peek found {got}")) };
            }
            "mutex" => {
                let place = self.place(step);
                let content = backend::mutex_content(step["owner"].as_str().unwrap());
                self.at.put(&place, &[("lock.mutex".to_owned(), content.into_bytes())]);
                return Ok(());
            }
            "block-env" => {
                let place = self.place(step);
                self.at.block_env(&place);
                return Ok(());
            }
            other => return Err(format!("unknown step `{other}`")),
        };
        self.check(step, outcome)
    }

    fn check_load(&mut self, step: &Value, files: &Value) -> Result<(), String> {
        let v = version(files);
        if let Some(expected) = step["expect"]["files"].as_object() {
            let got = files.as_object().cloned().unwrap_or_default();
            // Exactly these files; `null` stands for any content.
            let same = expected.len() == got.len()
                && expected.iter().all(|(k, e)| got.get(k).is_some_and(|g| e.is_null() || e == g));
            if !same {
                return Err(format!("loaded {files}"));
            }
        }
        self.check_version(step, &v)?;
        if let Some(name) = step["as"].as_str() {
            self.versions.insert(name.to_owned(), v);
        }
        Ok(())
    }

    fn check_version(&self, step: &Value, v: &str) -> Result<(), String> {
        let want = &step["expect"]["version"];
        if let Some(same) = want["sameAs"].as_str()
            && self.named(same) != v
        {
            return Err(format!("version {v} is not {same} ({})", self.named(same)));
        }
        if let Some(other) = want["changedFrom"].as_str()
            && self.named(other) == v
        {
            return Err(format!("version {v} is still {other}"));
        }
        Ok(())
    }

    fn check(&mut self, step: &Value, outcome: Outcome) -> Result<(), String> {
        if let Some(code) = step["expectError"].as_str() {
            return match outcome {
                Outcome::Failed(e) if e.code == code => match step["expectMessage"].as_str() {
                    Some(m) if !e.message.contains(m) => Err(format!("{code} without {m:?}: {}", e.message)),
                    _ => Ok(()),
                },
                Outcome::Failed(e) => Err(format!("failed with {e}, not {code}")),
                Outcome::Ok(v) => Err(format!("answered {v}, not {code}")),
                Outcome::Committed(_) => Err(format!("committed, not {code}")),
                Outcome::Conflict => Err(format!("conflict, not {code}")),
            };
        }
        match outcome {
            Outcome::Failed(e) => Err(format!("failed: {e} {:?}", e.details)),
            Outcome::Committed(v) if step["expect"] == "committed" => {
                if let Some(name) = step["as"].as_str() {
                    self.versions.insert(name.to_owned(), v);
                }
                Ok(())
            }
            Outcome::Conflict if step["expect"] == "conflict" => Ok(()),
            Outcome::Committed(_) => Err(format!("committed, expected {}", step["expect"])),
            Outcome::Conflict => Err(format!("conflict, expected {}", step["expect"])),
            Outcome::Ok(answer) => {
                let exact = step["do"] == "list";
                let fine = if exact {
                    answer == step["expect"]
                } else {
                    step["expect"].is_null() || matches(&step["expect"], &answer)
                };
                if fine { Ok(()) } else { Err(format!("answered {answer}")) }
            }
        }
    }

    /// The writers (or ops) of a race, each on its own handle, at the same time.
    fn race(&mut self, step: &Value, env: &str, scope: &str) -> Result<(), String> {
        let (racers, commits) = match step["writers"].as_object() {
            Some(w) => (w.clone(), true),
            None => (step["ops"].as_object().cloned().unwrap_or_default(), false),
        };
        for name in racers.keys() {
            self.handle(name);
        }
        let on = step["on"].as_str().map(|v| self.named(v));
        let outcomes: Vec<Outcome> = std::thread::scope(|s| {
            let running: Vec<_> = self
                .handles
                .iter_mut()
                .filter(|(name, _)| racers.contains_key(*name))
                .map(|(name, h)| {
                    let what = &racers[name];
                    let on = on.as_deref();
                    s.spawn(move || if commits { commit(h, env, scope, on, what) } else { op(h, env, scope, what) })
                })
                .collect();
            running.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let mut counts: BTreeMap<String, u64> = BTreeMap::new();
        for o in &outcomes {
            let key = match o {
                Outcome::Ok(_) => "ok".to_owned(),
                Outcome::Committed(v) => {
                    if let Some(name) = step["as"].as_str() {
                        self.versions.insert(name.to_owned(), v.clone());
                    }
                    "committed".to_owned()
                }
                Outcome::Conflict => "conflict".to_owned(),
                Outcome::Failed(e) => e.code.clone(),
            };
            *counts.entry(key).or_default() += 1;
        }
        let counts = json!(counts);
        if counts == step["expect"] { Ok(()) } else { Err(format!("the race ended {counts}")) }
    }
}

/// A commit of `changes` if the snapshot is version `on` (any snapshot without `on`).
fn commit(h: &mut Handle, env: &str, scope: &str, on: Option<&str>, changes: &Value) -> Outcome {
    let mut after = None;
    let stale = h.stale.as_ref().and_then(|s| s.get(&format!("{env}/{scope}"))).cloned();
    let answer = h.store.transact(&mut h.core, env, scope, |_, cell, _| {
        let cell = stale.clone().map_or(cell, |files| json!({ "files": files }));
        if on.is_some_and(|on| on != version(&cell["files"])) {
            after = None;
            return Ok(json!({ "changes": [] }));
        }
        after = Some(version(&applied(&cell["files"], changes)));
        Ok(json!({ "changes": changes }))
    });
    match (answer, after) {
        (Err(e), _) => Outcome::Failed(e),
        (Ok(_), Some(v)) => Outcome::Committed(v),
        (Ok(_), None) => Outcome::Conflict,
    }
}

/// One core cell operation through the handle's store (`readOnly`: its read path).
fn op(h: &mut Handle, env: &str, scope: &str, step: &Value) -> Outcome {
    let name = step["op"].as_str().unwrap_or_default().to_owned();
    let input = step["input"].as_object().cloned().unwrap_or_default();
    let decide = |core: &mut CoreComponent, cell: Value, now: i64| {
        let mut request: Map<String, Value> = input.clone();
        request.insert("cell".into(), cell);
        request.insert("nowMs".into(), now.into());
        let request = Value::Object(request);
        // The lock transactions (`locks.apply`) and the scope status (`commands`) through their typed
        // interfaces; the run machine's receipt steps, which the component decides only inside `runs.run`,
        // natively (`typed_stores::NOT_COMPONENT_FUNCTIONS`).
        let typed = typed_stores::answer(core, &name, &request.to_string())
            .or_else(|| typed_commands::answer(core, &name, &request.to_string()));
        match typed {
            Some(answer) => answer.and_then(|text| {
                serde_json::from_str(&text).map_err(|e| HostError::internal(format!("`{name}` answered: {e}")))
            }),
            None => Err(HostError::internal(format!("the component has no function for `{name}`"))),
        }
    };
    let answer = if step["readOnly"] == true {
        h.store.read(&mut h.core, env, scope, decide)
    } else {
        h.store.transact(&mut h.core, env, scope, decide)
    };
    answer.map_or_else(Outcome::Failed, Outcome::Ok)
}

/// Runs one case (number `n`) on a fresh store of `kind`: its number of steps, or what did not match where.
fn run_case(
    kind: Kind,
    base: &Path,
    port: Option<u16>,
    n: usize,
    (file, case): &(String, Value),
    sabotaged: bool,
) -> Result<usize, String> {
    let at = Location::new(kind, base, n, port);
    let cwd = base.join(format!("cwd-{n}"));
    std::fs::create_dir_all(&cwd).unwrap();
    let mut c = Case {
        at: &at,
        cwd,
        core: CoreComponent::load().unwrap(),
        handles: BTreeMap::new(),
        versions: BTreeMap::new(),
        sabotaged,
        env: case["cell"]["env"].as_str().unwrap_or("preview").to_owned(),
        scope: case["cell"]["scope"].as_str().unwrap_or("pr-1").to_owned(),
    };
    let steps = case["steps"].as_array().unwrap();
    for (i, step) in steps.iter().enumerate() {
        c.step(step).map_err(|why| format!("{file} step {i} ({step}): {why}"))?;
    }
    Ok(steps.len())
}

/// Runs every case on `kind`; panics with the backend, case and step of the first mismatch.
fn run_corpus(kind: Kind, base: &Path, port: Option<u16>) {
    let label = format!("{kind:?}");
    let (mut cases, mut steps, mut skipped) = (0, 0, Vec::new());
    for (n, entry) in corpus().iter().enumerate() {
        if let Some(reason) = entry.1["skip"][kind.family()].as_str() {
            skipped.push(format!("{} ({reason})", entry.0));
            continue;
        }
        match run_case(kind, base, port, n, entry, false) {
            Ok(count) => steps += count,
            Err(why) => panic!("store corpus on {label}: {why}"),
        }
        cases += 1;
    }
    println!("store corpus, native {label}: {cases} cases, {steps} steps; skipped: {skipped:?}");
    assert!(cases >= 7, "the corpus was not found");
}

/// The control: handles that commit on the snapshot they loaded last, without compare-and-swap, fail the
/// corpus where a stale handle must get the conflict (so a store that lost its compare-and-swap would).
#[test]
fn control_the_corpus_fails_a_store_without_compare_and_swap() {
    let t = TempDir::new("corpus-control");
    let conflicts = corpus().into_iter().find(|(f, _)| f == "conflicts.json").unwrap();
    for kind in [Kind::Dir, Kind::GitFile] {
        let why = run_case(kind, &t.0, None, 0, &conflicts, true).expect_err("the corpus passed a sabotaged store");
        assert!(why.starts_with("conflicts.json step 3 "), "{kind:?}: {why}");
        std::fs::remove_dir_all(&t.0).unwrap();
    }
}

#[test]
fn the_dir_store_keeps_the_store_contract() {
    let t = TempDir::new("corpus-dir");
    run_corpus(Kind::Dir, &t.0, None);
    let store = t.store();
    cli_journey("dir", &|args| json_in(&t.0, &store, args), &t.0, &store);
}

#[test]
fn the_git_store_keeps_the_store_contract_over_file() {
    let t = TempDir::new("corpus-git-file");
    run_corpus(Kind::GitFile, &t.0, None);
    let g = GitTemp::new("corpus-cli-file");
    let store = g.store();
    cli_journey("git file://", &|args| json_in(&g.t.0, &store, args), &g.t.0, &store);
    caller_repository_variables_are_scrubbed(&g.t.0, &store);
}

#[test]
fn the_git_store_keeps_the_store_contract_over_git_daemon() {
    let t = TempDir::new("corpus-git-daemon");
    let daemon = Daemon::start(&t.0);
    run_corpus(Kind::GitDaemon, &t.0, Some(daemon.port));
    common::git(&t.0, &["init", "-q", "--bare", "remote.git"]);
    let store = format!("git:git://127.0.0.1:{}/remote.git", daemon.port);
    cli_journey("git daemon", &|args| json_in(&t.0, &store, args), &t.0, &store);
}

/// The etcd store on a real etcd of this test's own (one member, loopback ports of its own): the corpus,
/// each case under a key prefix of its own, then the CLI journey under the default prefix.
#[test]
fn the_etcd_store_keeps_the_store_contract() {
    let t = TempDir::new("corpus-etcd");
    let etcd = common::etcd::Etcd::single("corpus");
    let port = etcd.members[0].client;
    run_corpus(Kind::Etcd, &t.0, Some(port));
    let conflicts = corpus().into_iter().find(|(f, _)| f == "conflicts.json").unwrap();
    let why = run_case(Kind::Etcd, &t.0, Some(port), 999, &conflicts, true).expect_err("a sabotaged etcd store passed");
    assert!(why.starts_with("conflicts.json step 3 "), "etcd control: {why}");
    let store = etcd.spec();
    cli_journey("etcd", &|args| json_in(&t.0, &store, args), &t.0, &store);
}

/// A git store run by a script whose environment points git at another repository (a git hook sets
/// `GIT_DIR`; a worktree `GIT_COMMON_DIR`) still works in its own clone: the core's `git-env` removes them.
/// The native host once removed only 6 of the 8 (not `GIT_COMMON_DIR`), and failed here.
fn caller_repository_variables_are_scrubbed(cwd: &Path, store: &str) {
    let out = command(cwd, &["lock", "acquire", "--scope", "scrub", "--holder", "a", "--json"])
        .env("BATON_STORE", store)
        .env("GIT_COMMON_DIR", "/nonexistent/common")
        .env("GIT_ALTERNATE_OBJECT_DIRECTORIES", "/nonexistent/objects")
        .env("GIT_DIR", "/nonexistent/dir")
        .output()
        .unwrap();
    let env = envelope(&out);
    assert_eq!((out.status.code(), env["lock"]["holder"].clone()), (Some(0), json!("a")), "{env}");
}

/// Runs `baton args --json` against one store: (exit code, envelope).
type Baton<'a> = &'a dyn Fn(&[&str]) -> (i32, Value);

/// The CLI journey on one store (each part on its own scope): what needs `baton` processes or time.
fn cli_journey(name: &str, b: Baton<'_>, cwd: &Path, store: &str) {
    assert_eq!(b(&["lock", "status", "--scope", "pr-0"]).1["lock"], Value::Null, "{name}");
    assert_eq!(b(&["receipt", "show", "--scope", "pr-0"]).1["receipt"], Value::Null, "{name}");

    // An expired lock is taken over and reported; renewals extend only the holder's lock.
    assert_eq!(b(&["lock", "acquire", "--scope", "pr-2", "--holder", "crashed", "--ttl", "50ms"]).0, 0);
    std::thread::sleep(Duration::from_millis(80));
    let (code, env) = b(&["lock", "acquire", "--scope", "pr-2", "--holder", "b", "--ttl", "1m"]);
    assert_eq!(
        (code, env["preempted"]["holder"].clone(), env["lock"]["epoch"].clone()),
        (0, json!("crashed"), json!(2)),
        "{name}"
    );
    let before = env["lock"]["expiresAt"].clone();
    let (code, env) = b(&["lock", "renew", "--scope", "pr-2", "--holder", "b", "--epoch", "2", "--ttl", "2m"]);
    assert_eq!(code, 0, "{name}: {env}");
    assert!(env["lock"]["expiresAt"].as_str() > before.as_str(), "{name}: renewal extends");

    // The fencing race: a lapsed holder writes until someone takes over, then never again.
    let write = |holder: &str, epoch: &str, content: &str| {
        let mut child =
            command(cwd, &["write", "state.json", "--scope", "pr-3", "--holder", holder, "--epoch", epoch, "--json"])
                .env("BATON_STORE", store)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
        std::io::Write::write_all(&mut child.stdin.take().unwrap(), content.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        (out.status.code().unwrap(), envelope(&out))
    };
    assert_eq!(b(&["lock", "acquire", "--scope", "pr-3", "--holder", "a", "--ttl", "50ms"]).0, 0);
    assert_eq!(write("a", "1", "a1").0, 0, "{name}: the holder writes");
    std::thread::sleep(Duration::from_millis(80));
    assert_eq!(write("a", "1", "a2").0, 0, "{name}: a lapsed lease nobody took still admits its holder");
    let (_, env) = b(&["lock", "acquire", "--scope", "pr-3", "--holder", "b", "--ttl", "1m"]);
    assert_eq!(env["preempted"]["holder"], "a", "{name}");
    let (code, env) = write("a", "1", "a3");
    assert_eq!(
        (code, env["error"]["code"].clone(), env["error"]["current"]["holder"].clone()),
        (3, json!("LOCK_LOST"), json!("b")),
        "{name}"
    );
    assert_eq!(write("b", "2", "b1").0, 0, "{name}");

    // Receipts written by runs are read back and listed.
    let record = format!("{} ledger record --adapter a --key k --id 1", common::BATON);
    assert_eq!(b(&["run", "--scope", "pr-4", "--", "sh", "-c", &record]).0, 0, "{name}");
    let (_, env) = b(&["receipt", "show", "--scope", "pr-4"]);
    assert_eq!(
        (env["receipt"]["status"].clone(), env["receipt"]["ledger"][0]["key"].clone()),
        (json!("complete"), json!("k")),
        "{name}"
    );
    let (_, env) = b(&["receipt", "list", "--scope", "pr-4"]);
    let scopes: Vec<&str> = env["receipts"].as_array().unwrap().iter().filter_map(|r| r["scope"].as_str()).collect();
    assert!(scopes.contains(&"pr-4"), "{name}: {scopes:?}");

    // Exactly one of 8 simultaneous processes wins a fresh scope; the others see the winner (LOCK_HELD).
    common::race_for_lock(cwd, store, "pr-5", 8, name);
}

/// Every class of I/O failure gets the core's code and message (`io-error`) through `HostError::io`, the
/// one place the native host turns an OS error into an error: the same text as the core's answer, which
/// Node's stores raise too (`tests/scenarios/io-error.json` pins the texts).
#[test]
fn io_failures_are_classified_by_the_core() {
    let mut core = CoreComponent::load().unwrap();
    for (errno, name, code) in [
        (libc::EACCES, "EACCES", "STORE_PERMISSION"),
        (libc::EPERM, "EPERM", "STORE_PERMISSION"),
        (libc::EROFS, "EROFS", "STORE_PERMISSION"),
        (libc::ENOSPC, "ENOSPC", "STORE_REJECTED"),
        (libc::EDQUOT, "EDQUOT", "STORE_REJECTED"),
        (libc::ENOTDIR, "ENOTDIR", "USAGE"),
        (libc::EIO, "EIO", "INTERNAL"),
    ] {
        let e = std::io::Error::from_raw_os_error(errno);
        let raw = HostError::io("cannot write /s/lock.json", &e);
        assert_eq!((raw.code.as_str(), raw.details["errno"].as_str()), ("INTERNAL", Some(name)));
        let err = core.classify(raw);
        let want = core.io_error(Some(name), "cannot write /s/lock.json", &e.to_string()).unwrap();
        assert_eq!((err.code.as_str(), err.message.as_str()), (code, want.message.as_str()), "{name}");
        assert_eq!(core.classify(err.clone()), err, "classifying twice changes nothing");
    }
    let other = HostError::usage("not an I/O failure").with("errno", "EROFS");
    assert_eq!(core.classify(other.clone()), other);
}

/// `BATON_MUTEX_WAIT_MS` is parsed by the core for the CLI as for Node: a whole number of milliseconds, or
/// `USAGE` (exit 2) before anything is read or written. The CLI once read `1e3` as 30 s (and Node as 1 s).
#[test]
fn a_mutex_wait_that_is_not_whole_milliseconds_is_usage() {
    let t = TempDir::new("corpus-mutex-wait");
    for bad in ["1e3", "1.5", "-1", "soon"] {
        let out = t
            .baton(&["lock", "acquire", "--scope", "pr-1", "--holder", "a", "--json"])
            .env("BATON_MUTEX_WAIT_MS", bad)
            .output()
            .unwrap();
        let env = envelope(&out);
        assert_eq!((out.status.code(), env["error"]["code"].as_str()), (Some(2), Some("USAGE")), "{bad}: {env}");
        assert!(env["error"]["message"].as_str().unwrap().contains("BATON_MUTEX_WAIT_MS"), "{env}");
        assert!(!t.0.join("store").exists(), "{bad}: nothing was created");
    }
    let out = t
        .baton(&["lock", "acquire", "--scope", "pr-1", "--holder", "a", "--json"])
        .env("BATON_MUTEX_WAIT_MS", " 250 ")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", envelope(&out));
}
