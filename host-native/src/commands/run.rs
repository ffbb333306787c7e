//! `baton run -- CMD`: the main job. Holds the scope's lease while CMD runs, and stops CMD before the lease
//! could be taken over.

use super::lock::{Target, acquire_with, data, sleep_until, target};
use crate::cli::RunArgs;
use crate::driver::Driver;
use crate::engine::CoreComponent;
use crate::error::HostError;
use crate::output::{Outcome, note};
use crate::store::mutex::random_hex;
use serde_json::{Value, json};
use std::process::{ExitStatus, Stdio};
use tokio::process::{Child, Command};
use tokio::signal::unix::{SignalKind, signal};

/// What `baton run` ended with: the outcome to render, and the exit code when it is not the error code's
/// (CMD's own code, or 128 + signal).
pub struct RunEnd {
    /// Data or error for the envelope.
    pub outcome: Outcome,
    /// The exit code to use instead of the one the core derives from the error code.
    pub exit: Option<u8>,
}

/// Runs `baton run`; hands the core back for rendering.
pub async fn run(mut core: CoreComponent, args: &RunArgs) -> (CoreComponent, RunEnd) {
    let end = |outcome| RunEnd { outcome, exit: None };
    let t = match target(&mut core, &args.target) {
        Ok(t) => t,
        Err(e) => return (core, end(Err(e))),
    };
    let holder = format!("run-{}", random_hex(4));
    let config = args.lease.config(&t.env, &t.scope, &holder);
    let driver = match Driver::start(core, t.store.clone(), &config) {
        Ok(d) => d,
        Err((core, e)) => return (core, end(Err(e))),
    };
    let mut run = Run { driver, t, holder, warnings: Vec::new(), lost: None, child_status: None, signal: None };
    let outcome = run.drive(args).await;
    (run.driver.into_core(), outcome)
}

struct Run {
    driver: Driver,
    t: Target,
    holder: String,
    warnings: Vec<String>,
    /// The LOCK_LOST error, once the lease was lost or the holder's deadline passed.
    lost: Option<Value>,
    child_status: Option<ExitStatus>,
    /// A SIGINT/SIGTERM that arrived before CMD started.
    signal: Option<i32>,
}

impl Run {
    async fn drive(&mut self, args: &RunArgs) -> RunEnd {
        let (Ok(mut sigint), Ok(mut sigterm)) = (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
        else {
            return RunEnd { outcome: Err(HostError::internal("cannot install signal handlers")), exit: None };
        };
        note(format!("scope {}/{}; acquiring the lease as {}", self.t.env, self.t.scope, self.holder));
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
        let mut child = match self.spawn(args, epoch) {
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
        let released = self.finish_lease().await;
        self.result(acquired, released)
    }

    fn interrupted(&mut self, sig: i32) -> HostError {
        self.signal = Some(sig);
        HostError::new(
            "INTERRUPTED",
            format!("baton run was interrupted by signal {sig} before the command started; nothing ran."),
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
                let w = event["warning"].as_str().unwrap_or_default().to_owned();
                note(&w);
                self.warnings.push(w);
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
                if event["kind"] == "released" {
                    return event["released"] == true;
                }
                if event["kind"] == "release-failed" {
                    return false;
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

    fn spawn(&self, args: &RunArgs, epoch: u64) -> Result<Child, HostError> {
        let (program, rest) = args.cmd.split_first().ok_or_else(|| HostError::usage("no command given after --"))?;
        let mut cmd = Command::new(program);
        cmd.args(rest)
            .env("BATON_ENV", &self.t.env)
            .env("BATON_SCOPE", &self.t.scope)
            .env("BATON_HOLDER", &self.holder)
            .env("BATON_EPOCH", epoch.to_string())
            .env("BATON_STORE", self.t.store.spec())
            // Its own process group, so stopping it reaches everything it started.
            .process_group(0)
            .stdin(Stdio::inherit());
        if args.target.json {
            // stdout carries exactly one envelope: the command's output goes to stderr.
            let stderr = std::io::stderr();
            let fd = std::os::fd::AsFd::as_fd(&stderr)
                .try_clone_to_owned()
                .map_err(|e| HostError::io("cannot dup stderr", &e))?;
            cmd.stdout(Stdio::from(fd));
        }
        let shown = args.cmd.join(" ");
        let shown = match shown.lines().next() {
            Some(first) if first.len() < shown.len() || first.len() > 80 => {
                format!("{} ...", first.chars().take(80).collect::<String>())
            }
            _ => shown,
        };
        note(format!("running `{shown}` under {}/{} (epoch {epoch})", self.t.env, self.t.scope));
        cmd.spawn().map_err(|e| {
            HostError::new("COMMAND_FAILED", format!("cannot start `{program}`: {e}")).with("command", args.cmd.clone())
        })
    }

    fn result(&mut self, acquired: Value, released: bool) -> RunEnd {
        let status = self.child_status;
        let code = status.and_then(|s| s.code());
        let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
        let exit_code = code.or(signal.map(|s| 128 + s));
        let mut fields = vec![
            ("context", self.t.context.clone()),
            ("holder", self.holder.clone().into()),
            ("lock", acquired["lock"].clone()),
            ("preempted", acquired["preempted"].clone()),
            ("exitCode", exit_code.map_or(Value::Null, Value::from)),
            ("released", released.into()),
            ("warnings", json!(self.warnings)),
        ];
        if let Some(lost) = self.lost.take() {
            let mut e = match lost.as_object() {
                Some(obj) => HostError::from_json(obj.clone()),
                None => HostError::new("LOCK_LOST", "the lease was lost"),
            };
            for (k, v) in fields {
                e.details.entry(k.to_owned()).or_insert(v);
            }
            return RunEnd { outcome: Err(e), exit: None };
        }
        match exit_code {
            Some(0) => RunEnd { outcome: Ok(data(&self.t, fields.drain(..))), exit: None },
            other => {
                let n = other.unwrap_or(1);
                let how = signal.map_or_else(|| format!("exited with {n}"), |s| format!("was killed by signal {s}"));
                let mut e = HostError::new(
                    "COMMAND_FAILED",
                    format!("the command {how}; the lease was held throughout and is released."),
                );
                for (k, v) in fields {
                    e.details.insert(k.to_owned(), v);
                }
                RunEnd { outcome: Err(e), exit: Some(u8::try_from(n).unwrap_or(1)) }
            }
        }
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
