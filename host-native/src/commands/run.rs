//! `baton run -- CMD` (the main job), `baton destroy -- CMD` and `baton lock-object ID -- CMD`: hold a lease
//! while CMD runs, record what the scope owns in fenced receipt writes, and stop CMD before the lease could
//! be taken over.

use super::lock::{Target, acquire_with, data, sleep_until, target_for};
use crate::cli::{ObjectArgs, RunArgs};
use crate::driver::Driver;
use crate::engine::CoreComponent;
use crate::error::HostError;
use crate::output::{Outcome, note};
use crate::store::mutex::random_hex;
use serde_json::{Value, json};
use std::process::{ExitStatus, Stdio};
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};

/// What `baton run` ended with: the outcome to render, and the exit code when it is not the error code's
/// (CMD's own code, 127 when it could not start, or 128 + signal).
pub struct RunEnd {
    /// Data or error for the envelope.
    pub outcome: Outcome,
    /// The exit code to use instead of the one the core derives from the error code.
    pub exit: Option<u8>,
}

/// Which job the lease guards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `baton run`: receipts, inheritance, handover.
    Run,
    /// `baton destroy`: receipts, the delete list on CMD's stdin.
    Destroy,
    /// `baton lock-object`: a parent-object lease, no receipts.
    Object,
}

/// `baton run`.
pub async fn run(core: CoreComponent, args: &RunArgs) -> (CoreComponent, RunEnd) {
    scoped(core, args, Mode::Run).await
}

/// `baton destroy`.
pub async fn destroy(core: CoreComponent, args: &RunArgs) -> (CoreComponent, RunEnd) {
    scoped(core, args, Mode::Destroy).await
}

async fn scoped(mut core: CoreComponent, args: &RunArgs, mode: Mode) -> (CoreComponent, RunEnd) {
    let t = match target_for(&mut core, &args.target, mode == Mode::Run) {
        Ok(t) => t,
        Err(e) => return (core, RunEnd { outcome: Err(e), exit: None }),
    };
    // Approval before any lock is taken or anything is written.
    let approval = core.invoke("approval", &json!({ "env": t.env, "approvedBy": args.approved_by }));
    let approved_by = match approval {
        Ok(a) => a["approvedBy"].as_str().map(str::to_owned),
        Err(e) => return (core, RunEnd { outcome: Err(e), exit: None }),
    };
    let prefix = if mode == Mode::Destroy { "destroy" } else { "run" };
    let holder = format!("{prefix}-{}", random_hex(4));
    let mut config = args.lease.config(&t.env, &t.scope, &holder);
    config["uniqueHolder"] = true.into();
    let job = Job {
        mode,
        cmd: args.cmd.clone(),
        json: args.target.json,
        approved_by,
        label: format!("{}/{}", t.env, t.scope),
    };
    start(core, t, holder, config, job).await
}

/// `baton lock-object`.
pub async fn lock_object(mut core: CoreComponent, args: &ObjectArgs) -> (CoreComponent, RunEnd) {
    let end = |core, e| (core, RunEnd { outcome: Err(e), exit: None });
    let mut names: Vec<String> = args.secret_env.clone();
    if let Ok(list) = std::env::var("BATON_SECRET_VARS") {
        names.extend(list.split(',').map(|n| n.trim().to_owned()).filter(|n| !n.is_empty()));
    }
    let secrets: Vec<String> = names.iter().filter_map(|n| std::env::var(n).ok()).collect();
    let cell = match core.invoke("parent-cell", &json!({ "identity": args.identity, "secrets": secrets })) {
        Ok(c) => c,
        Err(e) => return end(core, e),
    };
    let store = match super::open_store(&mut core, args.store.as_deref(), false) {
        Ok(s) => s,
        Err(e) => return end(core, e),
    };
    let field = |k: &str| cell[k].as_str().unwrap_or_default().to_owned();
    let context = json!({ "env": field("env"), "scope": field("scope"), "object": args.identity });
    let t = Target { store, env: field("env"), scope: field("scope"), context };
    let holder = format!("run-{}", random_hex(4));
    let mut config = args.lease.config(&t.env, &t.scope, &holder);
    config["label"] = cell["label"].clone();
    config["uniqueHolder"] = true.into();
    let job =
        Job { mode: Mode::Object, cmd: args.cmd.clone(), json: args.json, approved_by: None, label: field("label") };
    start(core, t, holder, config, job).await
}

struct Job {
    mode: Mode,
    cmd: Vec<String>,
    json: bool,
    approved_by: Option<String>,
    label: String,
}

async fn start(core: CoreComponent, t: Target, holder: String, config: Value, job: Job) -> (CoreComponent, RunEnd) {
    let driver = match Driver::start(core, t.store.clone(), &config) {
        Ok(d) => d,
        Err((core, e)) => return (core, RunEnd { outcome: Err(e), exit: None }),
    };
    let ttl_ms = config.get("ttlMs").and_then(Value::as_u64);
    let mut run = Run {
        driver,
        t,
        holder,
        ttl_ms,
        job,
        warnings: Vec::new(),
        lost: None,
        child_status: None,
        signal: None,
        receipt_error: None,
    };
    let end = run.drive().await;
    (run.driver.into_core(), end)
}

struct Run {
    driver: Driver,
    t: Target,
    holder: String,
    /// The lease's TTL when given (else the core's default).
    ttl_ms: Option<u64>,
    job: Job,
    warnings: Vec<String>,
    /// The LOCK_LOST error, once the lease was lost or the holder's deadline passed.
    lost: Option<Value>,
    child_status: Option<ExitStatus>,
    /// A SIGINT/SIGTERM that arrived before CMD started.
    signal: Option<i32>,
    /// Why the final receipt could not be written (other than a lost lease): the run fails with it.
    receipt_error: Option<HostError>,
}

/// What the run recorded at its start.
#[derive(Default)]
struct Begun {
    predecessor: Option<String>,
    /// How long the handover may hold the predecessor's lock.
    handover_ttl_ms: u64,
    delete: Value,
}

impl Run {
    fn warn(&mut self, w: &str) {
        note(w);
        self.warnings.push(w.to_owned());
    }

    async fn drive(&mut self) -> RunEnd {
        let (Ok(mut sigint), Ok(mut sigterm)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
        else {
            return RunEnd { outcome: Err(HostError::internal("cannot install signal handlers")), exit: None };
        };
        note(format!("{}; acquiring the lease as {}", self.job.label, self.holder));
        let acquired = tokio::select! {
            acquired = acquire_with(&mut self.driver, &self.t) => acquired.map_err(Ok),
            _ = sigint.recv() => Err(Err(libc::SIGINT)),
            _ = sigterm.recv() => Err(Err(libc::SIGTERM)),
        };
        let acquired = acquired.map_err(|e: Result<HostError, i32>| match e {
            Ok(e) => e,
            Err(sig) => self.interrupted(sig),
        });
        let (acquired, later) = match acquired {
            Ok(acquired) => acquired,
            Err(e) => {
                let _ = self.finish_lease().await;
                let exit = self.signal.map(|s| (128 + s) as u8);
                return RunEnd { outcome: Err(e), exit };
            }
        };
        if let Some(w) = acquired["warning"].as_str() {
            self.warnings.push(w.to_owned());
        }
        let epoch = acquired["epoch"].as_u64().unwrap_or_default();
        let begun = match self.begin(&acquired, epoch).await {
            Ok(b) => b,
            Err(e) => {
                let _ = self.finish_lease().await;
                return RunEnd { outcome: Err(e), exit: None };
            }
        };
        let mut child = match self.spawn(epoch, &begun.delete).await {
            Ok(child) => child,
            Err(e) => {
                let _ = self.finish_lease().await;
                // 127: the shell's code for a command that could not be started.
                return RunEnd { outcome: Err(e), exit: Some(127) };
            }
        };
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        let mut kill_at: Option<tokio::time::Instant> = None;
        // The lease loop while CMD runs, starting with what came after `acquired`.
        let mut events = later;
        while self.child_status.is_none() {
            for event in std::mem::take(&mut events) {
                if let Some(grace) = self.on_event(&event) {
                    signal_group(pgid, libc::SIGTERM);
                    kill_at.get_or_insert(tokio::time::Instant::now() + std::time::Duration::from_millis(grace));
                }
            }
            let wake = match self.driver.wake_at() {
                Ok(w) => w,
                Err(e) => {
                    self.fail_loop(e, pgid);
                    break;
                }
            };
            let step = tokio::select! {
                status = child.wait() => { self.child_status = status.ok(); Ok(Vec::new()) }
                Some((id, outcome)) = self.driver.next_result() => self.driver.on_result(id, &outcome),
                () = sleep_until(wake) => self.driver.on_timeout(),
                () = sleep_until(kill_at) => { signal_group(pgid, libc::SIGKILL); kill_at = None; Ok(Vec::new()) }
                _ = sigint.recv() => { signal_group(pgid, libc::SIGINT); Ok(Vec::new()) }
                _ = sigterm.recv() => { signal_group(pgid, libc::SIGTERM); Ok(Vec::new()) }
            };
            match step {
                Ok(evs) => events = evs,
                Err(e) => {
                    self.fail_loop(e, pgid);
                    break;
                }
            }
        }
        for event in events {
            self.on_event(&event);
        }
        if self.child_status.is_none() {
            // The loop failed: CMD was killed; reap it.
            self.child_status = child.wait().await.ok();
        }
        let finished = self.finish_receipt(epoch, &begun).await;
        let released = self.finish_lease().await;
        self.result(acquired, released, finished)
    }

    /// Records the run's start in a fenced receipt write (not for parent objects): context, epoch, the
    /// preempted lock, the approver, and the inheritance from the predecessor. For destroy, also the
    /// delete list.
    async fn begin(&mut self, acquired: &Value, epoch: u64) -> Result<Begun, HostError> {
        if self.job.mode == Mode::Object {
            return Ok(Begun::default());
        }
        let ctx = self.t.context.clone();
        let succession =
            json!({ "scope": ctx["scope"], "branch": ctx["branch"], "pr": ctx["pr"], "ttlMs": self.ttl_ms });
        let succession = self.driver.core().invoke("succession", &succession)?;
        let pred = succession["predecessor"].as_str().map(str::to_owned);
        let handover_ttl_ms = succession["handoverTtlMs"].as_u64().unwrap_or_default();
        // Only a predecessor with a receipt takes part: no lock or directory is made for a branch that never ran.
        let pred_text = match &pred {
            Some(p) if self.job.mode == Mode::Run => {
                self.t.store.read(self.driver.core(), &self.t.env, p, |_, cell, _| {
                    Ok(cell["files"]["latest.json"].as_str().map(str::to_owned))
                })?
            }
            _ => None,
        };
        let pred = pred.filter(|_| pred_text.is_some());
        let predecessor = pred.as_ref().map_or(Value::Null, |p| json!({ "scope": p, "text": pred_text }));
        let request = json!({
            "holder": self.holder,
            "epoch": epoch,
            "context": ctx,
            "hashKey": random_hex(16),
            "lockPreempted": acquired["preempted"]["holder"],
            "approvedBy": self.job.approved_by,
            "destroy": self.job.mode == Mode::Destroy,
            "predecessor": predecessor,
        });
        let begun = self.driver.call(None, "run-begin", request).await?;
        for w in begun["warnings"].as_array().cloned().unwrap_or_default() {
            self.warn(w.as_str().unwrap_or_default());
        }
        let mut delete = Value::Null;
        if self.job.mode == Mode::Destroy {
            let plan = self.driver.call(None, "destroy-plan", json!({ "holder": self.holder, "epoch": epoch })).await?;
            delete = plan["delete"].clone();
            let n = delete.as_array().map_or(0, Vec::len);
            note(format!("{n} resource(s) to delete; {} adopted one(s) forgotten", plan["adoptedForgotten"]));
        }
        Ok(Begun { predecessor: pred, handover_ttl_ms, delete })
    }

    /// Writes the final receipt (fenced; refused if the lease was taken over) and, after a successful run,
    /// hands the predecessor's resources over. Returns the run-finish answer, if it landed.
    async fn finish_receipt(&mut self, epoch: u64, begun: &Begun) -> Option<Value> {
        if self.job.mode == Mode::Object {
            return None;
        }
        let succeeded = self.lost.is_none() && self.child_status.is_some_and(|s| s.success());
        let sha = self.t.context["sha"].clone();
        let request = json!({ "holder": self.holder, "epoch": epoch, "succeeded": succeeded, "sha": sha });
        let finished = match self.driver.call(None, "run-finish", request).await {
            Ok(f) => f,
            // Refused by the fence: the lease was taken (or the ref deleted); the run ends with LOCK_LOST.
            Err(e) if e.code == "LOCK_LOST" => {
                self.lost.get_or_insert(e.to_json());
                return None;
            }
            // The command's work is done but not recorded (e.g. STORE_REJECTED, receipt kept locally): the run
            // fails with that error, so CI does not report a success whose record is missing.
            Err(e) => {
                if self.lost.is_none() {
                    self.warn(&format!("Could not write the final receipt: {}", e.message));
                    self.receipt_error = Some(e);
                }
                return None;
            }
        };
        if self.job.mode == Mode::Run
            && succeeded
            && let Some(pred) = &begun.predecessor
        {
            self.hand_over(pred, begun.handover_ttl_ms, &finished).await;
        }
        Some(finished)
    }

    /// Takes the predecessor's lock (for `ttl_ms`, the core's bound; no wait), rewrites its receipt without
    /// what this scope now owns, and releases it. Failures are warnings: this run's own receipt already landed.
    async fn hand_over(&mut self, pred: &str, ttl_ms: u64, finished: &Value) {
        let env = self.t.env.clone();
        let holder = format!("handover-{}", self.holder);
        let cell = Some((env.as_str(), pred));
        let lock = self.driver.call(cell, "lock-acquire", json!({ "holder": holder, "ttlMs": ttl_ms })).await;
        let lock = match lock {
            Ok(l) => l,
            Err(e) if e.code == "LOCK_HELD" => {
                let w = format!(
                    "Scope `{pred}` is busy; its resources will be handed over to `{}` on the next run.",
                    self.t.scope
                );
                return self.warn(&w);
            }
            Err(e) => return self.warn(&format!("Could not hand over the resources of scope `{pred}`: {}", e.message)),
        };
        let epoch = lock["lock"]["epoch"].clone();
        let request = json!({
            "holder": holder,
            "epoch": epoch,
            "successor": self.t.scope,
            "successorLedger": finished["receipt"]["ledger"],
        });
        match self.driver.call(cell, "handover", request).await {
            Ok(h) => note(format!("handed over {} resource(s) of scope `{pred}` to `{}`", h["moved"], self.t.scope)),
            Err(e) => self.warn(&format!("Could not hand over the resources of scope `{pred}`: {}", e.message)),
        }
        let _ = self.driver.call(cell, "lock-release", json!({ "holder": holder, "epoch": epoch })).await;
    }

    fn interrupted(&mut self, sig: i32) -> HostError {
        self.signal = Some(sig);
        HostError::new(
            "INTERRUPTED",
            format!("baton was interrupted by signal {sig} before the command started; nothing ran."),
        )
    }

    /// A broken loop (the core or the worker failed): stop CMD at once; the run fails.
    fn fail_loop(&mut self, e: HostError, pgid: Option<i32>) {
        signal_group(pgid, libc::SIGKILL);
        self.lost.get_or_insert(e.to_json());
    }

    /// Reacts to one lease event; returns the grace period when CMD must be stopped.
    fn on_event(&mut self, event: &Value) -> Option<u64> {
        match event["kind"].as_str() {
            Some("lost" | "must-stop") => {
                let msg = event["error"]["message"].as_str().unwrap_or("the lease was lost");
                note(format!("{msg} Stopping the command (SIGTERM, then SIGKILL)."));
                self.lost.get_or_insert(event["error"].clone());
                event["graceMs"].as_u64()
            }
            Some("renew-failed") => {
                note(format!(
                    "renewing the lease failed ({}); retrying",
                    event["error"]["message"].as_str().unwrap_or("unknown error")
                ));
                None
            }
            Some("release-failed") => {
                self.warn(event["warning"].as_str().unwrap_or_default());
                None
            }
            _ => None,
        }
    }

    /// Releases the lease (or cancels a wait) and drives the machine until it is over. Returns whether the
    /// store removed our lock.
    async fn finish_lease(&mut self) -> bool {
        let Ok(mut events) = self.driver.release() else { return false };
        loop {
            for event in std::mem::take(&mut events) {
                self.on_event(&event);
                match event["kind"].as_str() {
                    Some("released") => return event["released"] == true,
                    Some("release-failed") => return false,
                    _ => {}
                }
            }
            if self.driver.is_finished().unwrap_or(true) {
                return false;
            }
            let wake = self.driver.wake_at().ok().flatten();
            let step = tokio::select! {
                Some((id, outcome)) = self.driver.next_result() => self.driver.on_result(id, &outcome),
                () = sleep_until(wake) => self.driver.on_timeout(),
            };
            match step {
                Ok(evs) => events = evs,
                Err(_) => return false,
            }
        }
    }

    async fn spawn(&self, epoch: u64, delete: &Value) -> Result<Child, HostError> {
        let (program, rest) =
            self.job.cmd.split_first().ok_or_else(|| HostError::usage("no command given after --"))?;
        let mut cmd = Command::new(program);
        cmd.args(rest)
            .env("BATON_ENV", &self.t.env)
            .env("BATON_SCOPE", &self.t.scope)
            .env("BATON_HOLDER", &self.holder)
            .env("BATON_EPOCH", epoch.to_string())
            // The command's own baton calls need a spec that can write, credentials included.
            .env("BATON_STORE", self.t.store.export_spec())
            // Its own process group, so stopping it reaches everything it started.
            .process_group(0)
            .stdin(if self.job.mode == Mode::Destroy { Stdio::piped() } else { Stdio::inherit() });
        if self.job.json {
            // stdout carries exactly one envelope: the command's output goes to stderr.
            let stderr = std::io::stderr();
            let fd = std::os::fd::AsFd::as_fd(&stderr)
                .try_clone_to_owned()
                .map_err(|e| HostError::io("cannot dup stderr", &e))?;
            cmd.stdout(Stdio::from(fd));
        }
        // One line for people: whitespace runs (newlines of a script included) collapsed, at most 80 characters.
        let joined = self.job.cmd.join(" ");
        let words: Vec<&str> = joined.split_whitespace().collect();
        let flat = words.join(" ");
        let shown =
            if flat.chars().count() > 80 { format!("{} ...", flat.chars().take(80).collect::<String>()) } else { flat };
        note(format!("running `{shown}` under {} (epoch {epoch})", self.job.label));
        let mut child = cmd.spawn().map_err(|e| {
            HostError::new("COMMAND_FAILED", format!("cannot start `{program}`: {e}"))
                .with("command", self.job.cmd.clone())
        })?;
        if let Some(mut stdin) = child.stdin.take() {
            let list = if delete.is_null() { json!([]) } else { delete.clone() };
            // A command that does not read its stdin is fine: the write fails and is ignored.
            let _ = stdin.write_all(format!("{list}\n").as_bytes()).await;
        }
        Ok(child)
    }

    fn result(&mut self, acquired: Value, released: bool, finished: Option<Value>) -> RunEnd {
        let status = self.child_status;
        let code = status.and_then(|s| s.code());
        let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
        let exit_code = code.or(signal.map(|s| 128 + s));
        let receipt = finished.as_ref().map_or(
            Value::Null,
            |f| json!({ "runId": f["receipt"]["runId"], "status": f["status"], "ledger": f["receipt"]["ledger"] }),
        );
        let fields = vec![
            ("context", self.t.context.clone()),
            ("holder", self.holder.clone().into()),
            ("lock", acquired["lock"].clone()),
            ("preempted", acquired["preempted"].clone()),
            ("exitCode", exit_code.map_or(Value::Null, Value::from)),
            ("released", released.into()),
            ("receipt", receipt),
            ("warnings", json!(self.warnings)),
        ];
        let with = |mut e: HostError, fields: Vec<(&str, Value)>| {
            for (k, v) in fields {
                e.details.entry(k.to_owned()).or_insert(v);
            }
            e
        };
        if let Some(lost) = self.lost.take() {
            let e = match lost.as_object() {
                Some(obj) => HostError::from_json(obj.clone()),
                None => HostError::new("LOCK_LOST", "the lease was lost"),
            };
            return RunEnd { outcome: Err(with(e, fields)), exit: None };
        }
        if exit_code != Some(0) {
            let n = exit_code.unwrap_or(1);
            let how = signal.map_or_else(|| format!("exited with {n}"), |s| format!("was killed by signal {s}"));
            let e = HostError::new(
                "COMMAND_FAILED",
                format!("the command {how}; the lease was held throughout and is released."),
            );
            return RunEnd { outcome: Err(with(e, fields)), exit: Some(u8::try_from(n).unwrap_or(1)) };
        }
        if let Some(e) = self.receipt_error.take() {
            return RunEnd { outcome: Err(with(e, fields)), exit: None };
        }
        if self.job.mode == Mode::Destroy {
            let finished = finished.unwrap_or(Value::Null);
            let unresolved = finished["unresolved"].as_array().cloned().unwrap_or_default();
            if !unresolved.is_empty() {
                let keys: Vec<String> = unresolved
                    .iter()
                    .map(|r| format!("{}:{}", r["adapter"].as_str().unwrap_or("?"), r["key"].as_str().unwrap_or("?")))
                    .collect();
                let e = HostError::new(
                    "INTENT_UNRESOLVED",
                    format!(
                        "An interrupted run may have created {} but the destroy command did not resolve it (delete it if it exists, then `baton ledger forget`). It stays in the ledger; nothing was dropped on a guess.",
                        keys.join(", ")
                    ),
                )
                .with("unresolved", unresolved);
                return RunEnd { outcome: Err(with(e, fields)), exit: None };
            }
            if finished["status"] != "complete" {
                let left = finished["receipt"]["ledger"].as_array().map_or(0, Vec::len);
                let e = HostError::new(
                    "COMMAND_FAILED",
                    format!(
                        "the destroy command exited 0 but {left} resource(s) were not reported deleted (`baton ledger forget`); they stay in the ledger."
                    ),
                );
                return RunEnd { outcome: Err(with(e, fields)), exit: None };
            }
        }
        RunEnd { outcome: Ok(data(&self.t, fields)), exit: None }
    }
}

/// Sends `sig` to the process group of CMD.
fn signal_group(pgid: Option<i32>, sig: i32) {
    if let Some(pgid) = pgid {
        #[allow(unsafe_code)]
        // SAFETY: kill(2) with a negative pid signals the process group we created for CMD; no memory is involved.
        unsafe {
            libc::kill(-pgid, sig);
        }
    }
}
