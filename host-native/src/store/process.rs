//! Whether a process still exists, by the dir mutex's rule (docs/dir-store.md): pid plus its start time
//! from `/proc`, so that a reused pid is not mistaken for the old process, and a zombie counts as gone.
//! Used to recognise the git store's clones of processes that no longer exist.

/// The start time of process `pid` (field 22 of `/proc/<pid>/stat`, clock ticks since boot), or `None`
/// when it does not exist or is a zombie (state `Z` or `X`: it holds nothing any more). Where there is no
/// `/proc`, `"alive"` for a process that `kill(pid, 0)` finds.
pub fn start_time(pid: u32) -> Option<String> {
    if !std::path::Path::new("/proc/self/stat").exists() {
        return alive(pid).then(|| "alive".to_owned());
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_comm = &stat[stat.rfind(')')? + 1..];
    // Fields after the comm start at field 3 (the state); field 22 is the 20th of them.
    let mut fields = after_comm.split_whitespace();
    if matches!(fields.next(), Some("Z" | "X")) {
        return None;
    }
    fields.nth(18).map(str::to_owned)
}

/// This process's start time where `/proc` exists (`None` elsewhere).
pub fn own_start() -> Option<String> {
    std::path::Path::new("/proc/self/stat").exists().then(|| start_time(std::process::id())).flatten()
}

/// The host name (as the dir mutex names its host): only this host's clones are judged.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_owned())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

fn alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    #[allow(unsafe_code)]
    // SAFETY: kill with signal 0 only checks whether the process exists; it sends nothing.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}
