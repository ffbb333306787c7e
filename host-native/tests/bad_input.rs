//! Bad input, nothing lost: every malformed input of `docs/bad-input.md` through the real `baton` CLI. Each
//! test asserts the error code of the `--json` envelope, the exit code, that the lock, epoch and receipt
//! files (or the git ref tip) are byte for byte what they were (no temp file left either), and, where it
//! makes sense, that a later good run works once the input is repaired.
//!
//! The read-only store and the full disk need a private mount namespace (`unshare -m`: a read-only bind
//! mount, a small tmpfs). CI runs these tests as root on the same kind of machine; if the namespace cannot
//! be made, the test fails saying so: it never skips.

mod common;

use common::{BATON, GitTemp, TempDir, command, envelope, git, git_out, ledger_record, pass_env, with_json};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// Every file under `root` (relative path -> bytes), so a comparison catches changed bytes, deleted files
/// and left-over temp files alike.
fn snapshot(root: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.map(Result::unwrap) {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().display().to_string(), std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// `t.json(args)` asserting the error code and exit code; returns the error object.
fn refused(t: &TempDir, args: &[&str], code: &str, exit: i32) -> Value {
    let (got, env) = t.json(args);
    assert_eq!((got, env["error"]["code"].as_str()), (exit, Some(code)), "{args:?}: {env}");
    env["error"].clone()
}

/// The cell `preview/pr-1` of `t`'s store, created with `files` (name -> bytes).
fn cell_with(t: &TempDir, files: &[(&str, &[u8])]) -> std::path::PathBuf {
    let cell = t.0.join("store/preview/pr-1");
    std::fs::create_dir_all(&cell).unwrap();
    for (name, bytes) in files {
        std::fs::write(cell.join(name), bytes).unwrap();
    }
    cell
}

/// A lock of holder `h` at epoch 3, live for an hour, as `baton` writes it.
fn live_lock(holder: &str) -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let iso = |s: u64| {
        let out = Command::new("date").args(["-u", "-d", &format!("@{s}"), "+%Y-%m-%dT%H:%M:%S.000Z"]).output();
        String::from_utf8(out.unwrap().stdout).unwrap().trim().to_owned()
    };
    format!(
        "{{\n  \"holder\": \"{holder}\",\n  \"acquiredAt\": \"{}\",\n  \"expiresAt\": \"{}\",\n  \"epoch\": 3\n}}\n",
        iso(now),
        iso(now + 3600)
    )
}

const EPOCH: &[u8] = b"{\n  \"epoch\": 3\n}\n";

/// A valid version-2 receipt of `preview/pr-1` owning `k`.
fn receipt(version: &str) -> String {
    format!(
        "{{\n  \"version\": {version},\n  \"runId\": \"run-1\",\n  \"environment\": \"preview\",\n  \"scope\": \"pr-1\",\n  \"status\": \"complete\",\n  \"lines\": {{}},\n  \"ledger\": [{{\"adapter\": \"a\", \"key\": \"k\", \"createdBy\": \"baton\", \"id\": \"1\"}}],\n  \"history\": [],\n  \"hashKey\": \"\"\n}}\n"
    )
}

/// A fenced ledger write of holder `h` at epoch 3 on `preview/pr-1`.
const RECORD: [&str; 14] = ledger_record("k2", "2", "3");

/// `baton run` on `preview/pr-1` whose command would leave a marker.
fn run_args(t: &TempDir) -> Vec<String> {
    let marker = t.0.join("ran");
    ["run", "--scope", "pr-1", "--", "touch", marker.to_str().unwrap()].map(str::to_owned).to_vec()
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

#[test]
fn a_corrupt_lock_on_dir_is_lock_corrupt_and_kept_until_broken() {
    let t = TempDir::new("bi-corrupt-lock");
    // Not JSON, with bytes that are not UTF-8: the lossy read must never be written back.
    let garbage: &[u8] = b"\xff\xfe{holder: nobody knows\x00";
    let cell =
        cell_with(&t, &[("lock.json", garbage), ("epoch.json", EPOCH), ("latest.json", receipt("2").as_bytes())]);
    let before = snapshot(&t.0.join("store"));
    let err = refused(&t, &["lock", "acquire", "--scope", "pr-1", "--holder", "b"], "LOCK_CORRUPT", 1);
    assert!(err["message"].as_str().unwrap().contains("baton lock break --env preview --scope pr-1"), "{err}");
    refused(&t, &["lock", "status", "--scope", "pr-1"], "LOCK_CORRUPT", 1);
    refused(&t, &strs(&run_args(&t)), "LOCK_CORRUPT", 1);
    assert!(!t.0.join("ran").exists(), "the command never ran");
    refused(&t, &RECORD, "LOCK_LOST", 3);
    assert_eq!(snapshot(&t.0.join("store")), before, "nothing overwritten, nothing left behind");
    // Broken on purpose, the old bytes' verdict is recorded; then runs work again.
    let (code, env) = t.json(&["lock", "break", "--scope", "pr-1", "--holder", "b", "--reason", "garbage"]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(env["lock"]["epoch"], 4, "never an epoch at or below the recorded one");
    assert!(std::fs::read_to_string(cell.join("latest.json")).unwrap().contains("\"lockBreaks\""));
    t.json(&["lock", "release", "--scope", "pr-1", "--holder", "b"]);
    let (code, env) = t.json(&strs(&run_args(&t)));
    assert_eq!(code, 0, "{env}");
    assert!(t.0.join("ran").exists());
}

#[test]
fn a_truncated_lock_on_dir_is_lock_corrupt_and_kept() {
    let t = TempDir::new("bi-trunc-lock");
    let full = live_lock("a");
    let truncated = &full.as_bytes()[..full.len() / 2];
    cell_with(&t, &[("lock.json", truncated), ("epoch.json", EPOCH)]);
    let before = snapshot(&t.0.join("store"));
    let err = refused(&t, &["lock", "acquire", "--scope", "pr-1", "--holder", "b"], "LOCK_CORRUPT", 1);
    assert!(err["reason"].as_str().unwrap().starts_with("not valid JSON"), "{err}");
    refused(&t, &strs(&run_args(&t)), "LOCK_CORRUPT", 1);
    let (code, env) = t.json(&["lock", "release", "--scope", "pr-1", "--holder", "a"]);
    assert_eq!((code, env["released"].clone()), (0, Value::Bool(false)), "a release never deletes what it cannot read");
    assert_eq!(snapshot(&t.0.join("store")), before);
    assert!(!t.0.join("ran").exists());
}

#[test]
fn a_corrupt_epoch_record_on_dir_is_lock_corrupt_and_kept() {
    let t = TempDir::new("bi-epoch");
    cell_with(&t, &[("epoch.json", b"{\"epoch\": \"seven\"}")]);
    let before = snapshot(&t.0.join("store"));
    let err = refused(&t, &["lock", "acquire", "--scope", "pr-1", "--holder", "b"], "LOCK_CORRUPT", 1);
    assert!(err["message"].as_str().unwrap().contains("epoch.json"), "{err}");
    assert_eq!(snapshot(&t.0.join("store")), before);
}

#[test]
fn a_lock_from_a_newer_tool_on_dir_is_never_taken_over_or_rewritten() {
    let t = TempDir::new("bi-newer-lock");
    // Expired by its expiresAt, but its version says it may mean more: not judged, not taken over.
    let newer = b"{\"version\": 2, \"holder\": \"future\", \"expiresAt\": \"2020-01-01T00:00:00.000Z\", \"epoch\": 3, \"leases\": [1]}\n";
    cell_with(&t, &[("lock.json", newer), ("epoch.json", EPOCH), ("latest.json", receipt("2").as_bytes())]);
    let before = snapshot(&t.0.join("store"));
    let err = refused(&t, &["lock", "acquire", "--scope", "pr-1", "--holder", "b"], "LOCK_CORRUPT", 1);
    let message = err["message"].as_str().unwrap();
    assert!(message.contains("newer tool") && message.contains("Upgrade baton"), "{err}");
    assert_eq!(err["version"], 2, "{err}");
    refused(&t, &strs(&run_args(&t)), "LOCK_CORRUPT", 1);
    refused(&t, &["lock", "status", "--scope", "pr-1"], "LOCK_CORRUPT", 1);
    let renew = ["lock", "renew", "--scope", "pr-1", "--holder", "future", "--epoch", "3"];
    refused(&t, &renew, "LOCK_LOST", 3);
    let (code, env) = t.json(&["lock", "release", "--scope", "pr-1", "--holder", "future", "--epoch", "3"]);
    assert_eq!((code, env["released"].clone()), (0, Value::Bool(false)));
    assert_eq!(snapshot(&t.0.join("store")), before, "its bytes survive every command");
    assert!(!t.0.join("ran").exists());
}

#[test]
fn a_live_lock_with_unknown_fields_on_dir_is_held_and_its_fields_survive() {
    let t = TempDir::new("bi-unknown-fields");
    let lock = live_lock("h").replace("\"epoch\": 3", "\"epoch\": 3,\n  \"owner\": {\"team\": \"infra\"}");
    let cell = cell_with(&t, &[("lock.json", lock.as_bytes()), ("epoch.json", EPOCH)]);
    let before = snapshot(&t.0.join("store"));
    let err = refused(&t, &["lock", "acquire", "--scope", "pr-1", "--holder", "b"], "LOCK_HELD", 3);
    assert_eq!(err["lock"]["owner"]["team"], "infra");
    assert_eq!(snapshot(&t.0.join("store")), before);
    // Its holder renews it: the fields it does not know are kept.
    let (code, env) = t.json(&["lock", "renew", "--scope", "pr-1", "--holder", "h", "--epoch", "3"]);
    assert_eq!(code, 0, "{env}");
    let renewed: Value = serde_json::from_slice(&std::fs::read(cell.join("lock.json")).unwrap()).unwrap();
    assert_eq!(renewed["owner"]["team"], "infra");
}

/// The receipt rows: `latest.json` holds `bytes`, `h` holds the lock at epoch 3.
fn receipt_refused(name: &str, bytes: &[u8], code: &str) -> (TempDir, Value) {
    let t = TempDir::new(name);
    let cell =
        cell_with(&t, &[("lock.json", live_lock("h").as_bytes()), ("epoch.json", EPOCH), ("latest.json", bytes)]);
    let before = snapshot(&t.0.join("store"));
    let err = refused(&t, &RECORD, code, 1);
    refused(&t, &["receipt", "show", "--scope", "pr-1"], code, 1);
    refused(&t, &["status", "--scope", "pr-1"], code, 1);
    assert_eq!(snapshot(&t.0.join("store")), before, "the receipt is kept byte for byte");
    // `baton run` takes the lock, refuses to start on the receipt, and releases: the receipt is untouched.
    t.json(&["lock", "release", "--scope", "pr-1", "--holder", "h"]);
    refused(&t, &strs(&run_args(&t)), code, 1);
    assert!(!t.0.join("ran").exists(), "the command never ran");
    assert_eq!(std::fs::read(cell.join("latest.json")).unwrap(), bytes);
    assert!(!cell.join("lock.json").exists(), "the run released its lease");
    (t, err)
}

#[test]
fn a_corrupt_receipt_on_dir_is_receipt_corrupt_and_kept() {
    let (t, err) = receipt_refused("bi-corrupt-receipt", b"\xff{\"version\": 2, \"ledger\": oops", "RECEIPT_CORRUPT");
    assert!(err["message"].as_str().unwrap().contains("repair or move it by hand"), "{err}");
    // Moved away by hand: the next run starts a fresh receipt.
    let cell = t.0.join("store/preview/pr-1");
    std::fs::rename(cell.join("latest.json"), t.0.join("moved.json")).unwrap();
    let (code, env) = t.json(&strs(&run_args(&t)));
    assert_eq!(code, 0, "{env}");
}

#[test]
fn a_truncated_receipt_on_dir_is_receipt_corrupt_and_kept() {
    let full = receipt("2");
    let (_, err) = receipt_refused("bi-trunc-receipt", &full.as_bytes()[..full.len() - 40], "RECEIPT_CORRUPT");
    assert!(err["message"].as_str().unwrap().contains("not valid JSON"), "{err}");
}

#[test]
fn a_receipt_of_an_unknown_version_on_dir_is_receipt_version_and_kept() {
    let (_, err) = receipt_refused("bi-version", receipt("3").as_bytes(), "RECEIPT_VERSION");
    assert_eq!(err["version"], 3, "{err}");
    assert!(err["message"].as_str().unwrap().contains("upgrade baton"), "{err}");
}

#[test]
fn invalid_scope_and_environment_names_are_usage_and_touch_nothing() {
    let t = TempDir::new("bi-names");
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)]);
    let cases: [Case<'_>; 6] = [
        (&["lock", "acquire", "--scope", "../etc", "--holder", "h"], &[]),
        (&["lock", "acquire", "--scope", "pr-1", "--env", "a/b", "--holder", "h"], &[]),
        (&["run", "--scope", "pr 1", "--", "true"], &[]),
        (&["run", "--scope", "pr-1", "--", "true"], &[("BATON_ENV", "prod uction")]),
        (
            &["ledger", "record", "--adapter", "a", "--key", "k", "--holder", "h", "--epoch", "1"],
            &[("BATON_SCOPE", "x/y")],
        ),
        (&["status"], &[("BATON_CTX_ENV", "pré"), ("BATON_SCOPE", "pr-1")]),
    ];
    for (args, vars) in cases {
        let mut cmd = t.baton(&with_json(args));
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        let env = envelope(&out);
        assert_eq!((out.status.code(), env["error"]["code"].as_str()), (Some(2), Some("USAGE")), "{args:?}: {env}");
        let message = env["error"]["message"].as_str().unwrap();
        assert!(message.contains("is not a valid name") && message.contains("A-Z a-z 0-9 . _ -"), "{message}");
    }
    assert!(!t.0.join("store").exists(), "nothing was created");
    assert!(!t.0.join("etc").exists());
}

#[test]
fn a_store_path_that_is_a_file_is_usage_and_the_file_is_kept() {
    let t = TempDir::new("bi-file");
    let file = t.0.join("store");
    std::fs::write(&file, b"my notes\n").unwrap();
    for args in [
        &["lock", "acquire", "--scope", "pr-1", "--holder", "h"][..],
        &["lock", "status", "--scope", "pr-1"],
        &strs(&run_args(&t)),
        &["receipt", "show", "--scope", "pr-1"],
    ] {
        let err = refused(&t, args, "USAGE", 2);
        let message = err["message"].as_str().unwrap();
        assert!(message.contains("is a file, not a directory") && message.contains("--store"), "{message}");
    }
    // Also when the file is further up the path.
    let deeper = format!("dir:{}/sub", file.display());
    let (code, env) = common::json_in(&t.0, &deeper, &["lock", "acquire", "--scope", "pr-1", "--holder", "h"]);
    assert_eq!((code, env["error"]["code"].as_str()), (2, Some("USAGE")), "{env}");
    assert_eq!(std::fs::read(&file).unwrap(), b"my notes\n");
    assert!(!t.0.join("ran").exists());
}

/// Runs `script` with `sh` in a private mount namespace (`unshare -m`), with `$B` the binary under test and
/// `$S` the store directory of `t`. The script must print `mounted` once its mount is made.
fn in_namespace(t: &TempDir, script: &str, vars: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new("unshare");
    pass_env(cmd.current_dir(&t.0).env_clear().args(["-m", "sh", "-c", script]));
    cmd.env("B", BATON).env("S", t.0.join("store")).env("BATON_STORE", t.store()).envs(vars.iter().copied());
    let out = cmd.output().expect("unshare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("mounted"),
        "the test needs a private mount namespace (unshare -m, as root): {}{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The envelope `baton` wrote to `t.0/<name>.json` and its exit code in `t.0/<name>.rc`.
fn saved(t: &TempDir, name: &str) -> (i32, Value) {
    let rc = std::fs::read_to_string(t.0.join(format!("{name}.rc"))).unwrap().trim().parse().unwrap();
    let text = std::fs::read_to_string(t.0.join(format!("{name}.json"))).unwrap();
    (rc, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}")))
}

#[test]
fn a_read_only_store_is_store_permission_and_works_once_writable() {
    let t = TempDir::new("bi-readonly");
    let (code, _) = t.json(&["lock", "acquire", "--scope", "pr-1", "--holder", "h", "--ttl", "1h"]);
    assert_eq!(code, 0);
    let epoch: String = t.json(&["lock", "status", "--scope", "pr-1"]).1["lock"]["epoch"].to_string();
    let record = ledger_record("k2", "2", &epoch);
    assert_eq!(t.json(&record).0, 0);
    let before = snapshot(&t.0.join("store"));
    let record_line = record.join(" ");
    let script = format!(
        "mount --bind \"$S\" \"$S\" && mount -o remount,ro,bind \"$S\" && echo mounted || exit 1
         \"$B\" {record_line} --json > record.json; echo $? > record.rc
         \"$B\" lock acquire --scope pr-2 --holder x --json > acquire.json; echo $? > acquire.rc
         \"$B\" run --scope pr-3 --json -- touch ran > run.json; echo $? > run.rc
         \"$B\" receipt show --scope pr-1 --json > show.json; echo $? > show.rc"
    );
    in_namespace(&t, &script, &[]);
    for name in ["record", "acquire", "run"] {
        let (code, env) = saved(&t, name);
        assert_eq!((code, env["error"]["code"].as_str()), (1, Some("STORE_PERMISSION")), "{name}: {env}");
        let message = env["error"]["message"].as_str().unwrap();
        assert!(message.contains("Read-only file system") && message.contains("readable and writable"), "{message}");
    }
    assert_eq!(saved(&t, "show").0, 0, "reading a read-only store works");
    assert!(!t.0.join("ran").exists());
    assert_eq!(snapshot(&t.0.join("store")), before, "nothing changed, no temp file left");
    // Writable again: the same write lands.
    let (code, env) = t.json(&record);
    assert_eq!(code, 0, "{env}");
    assert_eq!(t.receipt("preview", "pr-1")["ledger"][0]["key"], "k2");
}

#[test]
fn a_full_disk_during_a_receipt_write_keeps_the_old_receipt_and_leaves_no_temp_file() {
    let t = TempDir::new("bi-full");
    // A label of 100 kB makes the receipt far larger than the space left (8 pages).
    let label = "x".repeat(100_000);
    let script = String::from(
        "mkdir -p \"$S\" && mount -t tmpfs -o size=1m tmpfs \"$S\" && echo mounted || exit 1
         \"$B\" lock acquire --scope pr-1 --holder h --ttl 1h --json > acquire.json; echo $? > acquire.rc
         \"$B\" ledger record --scope pr-1 --adapter a --key k --id 1 --holder h --epoch 1 --json > small.json; echo $? > small.rc
         cp -a \"$S\" before
         avail=$(df -B4096 --output=avail \"$S\" | tail -1)
         dd if=/dev/zero of=\"$S/filler\" bs=4096 count=$((avail - 8)) 2>/dev/null
         \"$B\" ledger record --scope pr-1 --adapter a --key big --id 2 --label \"$L\" --holder h --epoch 1 --json > full.json; echo $? > full.rc
         rm \"$S/filler\"; cp -a \"$S\" after
         \"$B\" ledger record --scope pr-1 --adapter a --key big --id 2 --label \"$L\" --holder h --epoch 1 --json > freed.json; echo $? > freed.rc
         cp -a \"$S\" freed",
    );
    in_namespace(&t, &script, &[("L", &label)]);
    assert_eq!(saved(&t, "acquire").0, 0);
    assert_eq!(saved(&t, "small").0, 0);
    let (code, env) = saved(&t, "full");
    assert_eq!((code, env["error"]["code"].as_str()), (1, Some("STORE_REJECTED")), "{env}");
    let message = env["error"]["message"].as_str().unwrap();
    assert!(message.contains("No space left on device") && message.contains("free space there"), "{message}");
    let (before, after) = (snapshot(&t.0.join("before")), snapshot(&t.0.join("after")));
    assert!(before.contains_key("preview/pr-1/latest.json"), "{:?}", before.keys());
    assert_eq!(after, before, "the old receipt and lock are intact and no temp file is left");
    let (code, env) = saved(&t, "freed");
    assert_eq!(code, 0, "with space again the same write lands: {env}");
    let latest: Value =
        serde_json::from_slice(&std::fs::read(t.0.join("freed/preview/pr-1/latest.json")).unwrap()).unwrap();
    assert_eq!(latest["ledger"][1]["key"], "big");
}

// --- the git store ----------------------------------------------------------------------------------------

const REF: &str = "refs/heads/baton-receipts/preview/pr-1";

/// Puts `files` (paths in the ref's tree) on the cell ref of `preview/pr-1` in one commit, as a person or a
/// broken tool would; returns the new tip.
fn put_on_ref(g: &GitTemp, files: &[(&str, &[u8])]) -> String {
    let index = g.t.0.join("tmp-index");
    let _ = std::fs::remove_file(&index);
    let gitc = |args: &[&str], input: Option<&[u8]>| {
        let mut cmd = Command::new("git");
        cmd.current_dir(&g.t.0).env("GIT_INDEX_FILE", &index).arg("--git-dir").arg(g.remote()).args(args);
        cmd.stdin(std::process::Stdio::piped()).stdout(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        if let Some(bytes) = input {
            std::io::Write::write_all(child.stdin.as_mut().unwrap(), bytes).unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "git {args:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    gitc(&["read-tree", REF], None);
    for (path, bytes) in files {
        let blob = gitc(&["hash-object", "-w", "--stdin"], Some(bytes));
        gitc(&["update-index", "--add", "--cacheinfo", &format!("100644,{blob},{path}")], None);
    }
    let tree = gitc(&["write-tree"], None);
    let commit =
        gitc(&["-c", "user.name=t", "-c", "user.email=t@t", "commit-tree", &tree, "-p", REF, "-m", "by hand"], None);
    gitc(&["update-ref", REF, &commit], None);
    commit
}

fn tip(g: &GitTemp) -> String {
    git_out(&g.t.0, &["--git-dir", "remote.git", "rev-parse", REF]).trim().to_owned()
}

/// `g.json(args)` asserting the error code and exit code; returns the error object.
fn git_refused(g: &GitTemp, args: &[&str], code: &str, exit: i32) -> Value {
    let (got, env) = g.json(args);
    assert_eq!((got, env["error"]["code"].as_str()), (exit, Some(code)), "{args:?}: {env}");
    env["error"].clone()
}

/// A remote whose `preview/pr-1` ref exists (a lock of `h` taken and released, so epoch 1 is recorded).
fn git_cell(name: &str) -> GitTemp {
    let g = GitTemp::new(name);
    let (code, env) = g.json(&["lock", "acquire", "--scope", "pr-1", "--holder", "h"]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(g.json(&["lock", "release", "--scope", "pr-1", "--holder", "h"]).0, 0);
    g
}

#[test]
fn corrupt_truncated_and_newer_locks_on_git_are_lock_corrupt_and_the_ref_is_untouched() {
    let full = live_lock("a");
    let cases: [(&str, &[u8]); 3] = [
        ("corrupt", b"\xff\xfe{holder: nobody knows"),
        ("truncated", &full.as_bytes()[..full.len() / 2]),
        (
            "newer",
            b"{\"version\": 2, \"holder\": \"future\", \"expiresAt\": \"2020-01-01T00:00:00.000Z\", \"epoch\": 9}",
        ),
    ];
    for (what, bytes) in cases {
        let g = git_cell(&format!("bi-lock-{what}"));
        let tip_before = put_on_ref(&g, &[("preview/pr-1/lock.json", bytes)]);
        let refs = g.refs();
        let err = git_refused(&g, &["lock", "acquire", "--scope", "pr-1", "--holder", "b"], "LOCK_CORRUPT", 1);
        assert!(err["message"].as_str().unwrap().contains("baton lock break"), "{what}: {err}");
        git_refused(&g, &["run", "--scope", "pr-1", "--", "true"], "LOCK_CORRUPT", 1);
        git_refused(&g, &["lock", "status", "--scope", "pr-1"], "LOCK_CORRUPT", 1);
        assert_eq!(tip(&g), tip_before, "{what}: the ref was not moved");
        assert_eq!(g.refs(), refs, "{what}: no ref was added");
        assert_eq!(
            g.file("preview/pr-1", "preview/pr-1/lock.json").unwrap().as_bytes(),
            String::from_utf8_lossy(bytes).as_bytes()
        );
        // Broken on purpose, the scope works again.
        let (code, env) = g.json(&["lock", "break", "--scope", "pr-1", "--holder", "b", "--reason", what]);
        assert_eq!(code, 0, "{what}: {env}");
        assert!(env["lock"]["epoch"].as_u64().unwrap() >= 2, "{what}: {env}");
    }
}

#[test]
fn corrupt_truncated_and_newer_receipts_on_git_are_refused_and_the_ref_is_untouched() {
    let full = receipt("2");
    let cases: [(&str, Vec<u8>); 3] = [
        ("RECEIPT_CORRUPT", b"{\"version\": 2, \"ledger\": oops".to_vec()),
        ("RECEIPT_CORRUPT", full.as_bytes()[..full.len() - 40].to_vec()),
        ("RECEIPT_VERSION", receipt("3").into_bytes()),
    ];
    for (i, (code, bytes)) in cases.into_iter().enumerate() {
        let g = git_cell(&format!("bi-receipt-{i}"));
        let (c, env) = g.json(&["lock", "acquire", "--scope", "pr-1", "--holder", "h", "--ttl", "1h"]);
        assert_eq!(c, 0, "{env}");
        let epoch = env["lock"]["epoch"].to_string();
        let tip_before = put_on_ref(&g, &[("preview/pr-1/latest.json", &bytes)]);
        let record = ledger_record("k2", "2", &epoch);
        git_refused(&g, &record, code, 1);
        git_refused(&g, &["receipt", "show", "--scope", "pr-1"], code, 1);
        assert_eq!(tip(&g), tip_before, "{code}: the ref was not moved");
        assert_eq!(g.file("preview/pr-1", "preview/pr-1/latest.json").unwrap().into_bytes(), bytes);
        assert!(!g.t.0.join(".baton/unpushed").exists(), "nothing kept: nothing was decided");
    }
}

#[test]
fn an_unreachable_remote_is_store_permission_and_nothing_is_kept() {
    let g = GitTemp::new("bi-unreachable");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let missing = g.t.0.join("no-such-remote.git");
    for store in [format!("git:http://127.0.0.1:{port}/r.git"), format!("git:file://{}", missing.display())] {
        for args in [
            &["lock", "acquire", "--scope", "pr-1", "--holder", "h"][..],
            &["lock", "acquire", "--scope", "pr-1"],
            &["run", "--scope", "pr-1", "--", "touch", "ran"],
            &["ledger", "record", "--scope", "pr-1", "--adapter", "a", "--key", "k", "--holder", "h", "--epoch", "1"],
            &["status", "--scope", "pr-1"],
        ] {
            let (code, env) = common::json_in(&g.t.0, &store, args);
            assert_eq!((code, env["error"]["code"].as_str()), (1, Some("STORE_PERMISSION")), "{store} {args:?}: {env}");
            let message = env["error"]["message"].as_str().unwrap();
            assert!(message.contains("does not exist, is unreachable") && message.contains("Grant them"), "{message}");
            // Nothing was committed, so the lease tries no clean-up release (and says nothing about one).
            assert!(!message.contains("Could not release") && env["error"].get("releaseWarning").is_none(), "{env}");
        }
    }
    assert!(!g.t.0.join("ran").exists(), "the command never ran");
    assert!(!g.t.0.join(".baton").exists() && !missing.exists(), "nothing kept or created locally");
    // The same remote, reachable: a run works.
    git(&g.t.0, &["init", "-q", "--bare", "no-such-remote.git"]);
    let store = format!("git:file://{}", missing.display());
    let out = command(&g.t.0, &["run", "--scope", "pr-1", "--json", "--", "true"])
        .env("BATON_STORE", &store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
}
