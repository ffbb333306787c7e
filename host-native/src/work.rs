//! The command a run guards (`baton run -- CMD`): started in a process group of its own, signalled as the
//! run machine says, reaped. Process plumbing only: when to start, signal or kill is the machine's call.

use crate::engine::wit::runs::{WorkEnd, WorkSignal};
use crate::error::HostError;
use crate::output::note;
use serde_json::Value;
use std::collections::BTreeMap;
use std::process::Stdio;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

/// What to run and how its output goes.
#[derive(Clone, Debug)]
pub struct Work {
    /// The command and its arguments.
    pub cmd: Vec<String>,
    /// With `--json` stdout carries exactly one envelope: the command's stdout goes to stderr.
    pub json: bool,
    /// `BATON_STORE` for the command's own baton calls (credentials included).
    pub store_spec: String,
}

/// A started command.
pub struct Running {
    child: Child,
    pgid: Option<i32>,
}

impl Work {
    /// Starts the command with `env` exported (and `BATON_STORE`); a destroy's `delete` list goes to its
    /// stdin as one JSON line. Errors say why it could not start (the run reports it as exit 127).
    pub async fn start(
        &self,
        env: &BTreeMap<String, String>,
        delete: Option<&Value>,
        label: &str,
        epoch: u64,
    ) -> Result<Running, HostError> {
        let (program, rest) = self.cmd.split_first().ok_or_else(|| HostError::usage("no command given after --"))?;
        let mut cmd = Command::new(program);
        cmd.args(rest)
            .envs(env)
            .env("BATON_STORE", &self.store_spec)
            // Its own process group, so stopping it reaches everything it started.
            .process_group(0)
            .stdin(if delete.is_some() { Stdio::piped() } else { Stdio::inherit() });
        if self.json {
            let stderr = std::io::stderr();
            let fd = std::os::fd::AsFd::as_fd(&stderr)
                .try_clone_to_owned()
                .map_err(|e| HostError::io("cannot dup stderr", &e))?;
            cmd.stdout(Stdio::from(fd));
        }
        note(format!("running `{}` under {label} (epoch {epoch})", shown(&self.cmd)));
        let mut child = cmd.spawn().map_err(|e| {
            HostError::new("COMMAND_FAILED", format!("cannot start `{program}`: {e}")).with("command", self.cmd.clone())
        })?;
        if let Some(mut stdin) = child.stdin.take() {
            let list = delete.cloned().unwrap_or_else(|| Value::Array(Vec::new()));
            // A command that does not read its stdin is fine: the write fails and is ignored.
            let _ = stdin.write_all(format!("{list}\n").as_bytes()).await;
        }
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        Ok(Running { child, pgid })
    }
}

impl Running {
    /// Waits for the command to end: `{"kind":"exited","code"}` or `{"kind":"signalled","signal"}`.
    pub async fn wait(&mut self) -> WorkEnd {
        match self.child.wait().await {
            Ok(status) => match (status.code(), std::os::unix::process::ExitStatusExt::signal(&status)) {
                (Some(code), _) => WorkEnd::Exited(code),
                (None, Some(signal)) => WorkEnd::Signalled(signal),
                (None, None) => WorkEnd::Exited(1),
            },
            Err(_) => WorkEnd::Exited(1),
        }
    }

    /// Sends `signal` to the command's whole process group.
    pub fn signal(&self, signal: WorkSignal) {
        let sig = match signal {
            WorkSignal::Interrupt => libc::SIGINT,
            WorkSignal::Terminate => libc::SIGTERM,
            WorkSignal::Kill => libc::SIGKILL,
        };
        if let Some(pgid) = self.pgid {
            #[allow(unsafe_code)]
            // SAFETY: kill(2) with a negative pid signals the process group we created; no memory is involved.
            unsafe {
                libc::kill(-pgid, sig);
            }
        }
    }
}

/// One line for people: whitespace runs (newlines of a script included) collapsed, at most 80 characters.
fn shown(cmd: &[String]) -> String {
    let joined = cmd.join(" ");
    let flat = joined.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 80 { format!("{} ...", flat.chars().take(80).collect::<String>()) } else { flat }
}
