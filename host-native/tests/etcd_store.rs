//! The etcd store end to end with the CLI, on one real etcd of this file's own (started once, stopped at
//! the end): the succession journey, eight scopes at once, a paused run fenced out, a cell deleted
//! mid-run, the round trips of a lease cycle and a stale cell refused by the compare, endpoints that refuse
//! or never answer, TLS with a CA file, and a user and password that never show.

mod common;

use baton_native::commands::open_store;
use baton_native::engine::CoreComponent;
use baton_native::engine::wit::locks::FencedWriteRequest;
use baton_native::error::HostError;
use baton_native::store::Store;
use common::etcd::Etcd;
use common::{BATON, TempDir, command, envelope, json_in, sh, wait_for, with_json};
use serde_json::{Value, json};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

fn kill(pid: u32, sig: i32) {
    #[allow(unsafe_code)]
    // SAFETY: signals a child process of this test.
    unsafe {
        libc::kill(pid as i32, sig);
    }
}

/// The receipt of `env/scope` as etcd holds it (default prefix).
fn receipt(etcd: &Etcd, env: &str, scope: &str) -> Value {
    let text =
        etcd.get(&format!("/baton/{env}/{scope}/latest.json")).unwrap_or_else(|| panic!("no receipt for {scope}"));
    serde_json::from_str(&text).unwrap()
}

/// One etcd for every journey of this file, each journey on scopes of its own.
#[test]
fn journeys_on_a_real_etcd() {
    let etcd = Etcd::single("journeys");
    let t = TempDir::new("etcd-journeys");
    let store = etcd.spec();
    let json = |args: &[&str]| json_in(&t.0, &store, args);

    common::succession_journey(&t.0, &json, &|env, scope| receipt(&etcd, env, scope));
    eight_scopes_at_once(&t, &etcd, &store);
    a_paused_run_is_fenced_out(&t, &store);
    a_cell_deleted_mid_run_fails_the_run_safely(&t, &etcd, &store);
    a_cycle_is_three_round_trips_and_a_stale_cell_is_read_fresh(&etcd);
    unreachable_and_silent_endpoints_end_in_bounded_time(&t, &etcd);
    tls_with_a_ca_file(&t);
    // Last: it turns authentication on.
    credentials_work_and_never_show(&t, &etcd);
}

fn eight_scopes_at_once(t: &TempDir, etcd: &Etcd, store: &str) {
    let children: Vec<Child> = (0..8)
        .map(|i| {
            let record = sh(&format!("baton ledger record --adapter a --key k{i} --id {i}"));
            command(&t.0, &with_json(&["run", "--scope", &format!("s{i}"), "--", "sh", "-c", &record]))
                .env("BATON_STORE", store)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "s{i}: {}", String::from_utf8_lossy(&out.stderr));
        let env = envelope(&out);
        assert_eq!((env["warnings"].clone(), env["lock"]["epoch"].clone()), (json!([]), json!(1)), "s{i}");
        let r = receipt(etcd, "preview", &format!("s{i}"));
        assert_eq!((r["status"].as_str(), r["ledger"][0]["key"].clone()), (Some("complete"), json!(format!("k{i}"))));
        assert_eq!(etcd.get(&format!("/baton/preview/s{i}/lock.json")), None, "s{i} released");
    }
    let (_, env) = json_in(&t.0, store, &["receipt", "list"]);
    let scopes: Vec<&str> = env["receipts"].as_array().unwrap().iter().filter_map(|r| r["scope"].as_str()).collect();
    for i in 0..8 {
        assert!(scopes.contains(&format!("s{i}").as_str()), "{scopes:?}");
    }
}

fn a_paused_run_is_fenced_out(t: &TempDir, store: &str) {
    let dir = t.0.join("paused");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display();
    let script = format!(
        "while :; do if echo x | {BATON} write state.txt 2>>{d}/write.err; then touch {d}/wrote; else touch {d}/refused; fi; sleep 0.1; done"
    );
    let child = command(&t.0, &with_json(&["run", "--scope", "paused", "--ttl", "1s", "--", "sh", "-c", &script]))
        .env("BATON_STORE", store)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("a first fenced write", Duration::from_secs(20), || dir.join("wrote").exists());
    kill(child.id(), libc::SIGSTOP);
    std::thread::sleep(Duration::from_millis(1200));
    let (code, env) =
        json_in(&t.0, store, &["lock", "acquire", "--scope", "paused", "--holder", "successor", "--ttl", "1m"]);
    assert_eq!((code, env["lock"]["epoch"].clone()), (0, json!(2)), "{env}");
    wait_for("a refused write", Duration::from_secs(20), || dir.join("refused").exists());
    let refusals = std::fs::read_to_string(dir.join("write.err")).unwrap();
    assert!(refusals.contains("error LOCK_LOST"), "{refusals}");
    kill(child.id(), libc::SIGCONT);
    let out = child.wait_with_output().unwrap();
    assert_eq!((out.status.code(), envelope(&out)["error"]["code"].clone()), (Some(3), json!("LOCK_LOST")));
    let (_, env) = json_in(&t.0, store, &["lock", "status", "--scope", "paused"]);
    assert_eq!(env["lock"]["holder"], "successor", "the successor's lock is untouched");
}

fn a_cell_deleted_mid_run_fails_the_run_safely(t: &TempDir, etcd: &Etcd, store: &str) {
    let dir = t.0.join("deleted");
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.display();
    let script = format!(
        "touch {d}/started; while [ ! -e {d}/go ]; do sleep 0.05; done; echo x | {BATON} write state.txt 2>{d}/write.err; echo $? > {d}/write.rc"
    );
    let child = command(&t.0, &with_json(&["run", "--scope", "del", "--", "sh", "-c", &script]))
        .env("BATON_STORE", store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the command to start", Duration::from_secs(20), || dir.join("started").exists());
    etcd.delete_prefix("/baton/preview/del/");
    std::fs::write(dir.join("go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(std::fs::read_to_string(dir.join("write.rc")).unwrap().trim(), "3", "the fenced write is refused");
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(envelope(&out)["error"]["code"], "LOCK_LOST");
    assert_eq!(etcd.get("/baton/preview/del/state.txt"), None, "nothing was written");
    assert_eq!(etcd.get("/baton/preview/del/lock.json"), None, "nothing was re-asserted");
    let (code, env) = json_in(&t.0, store, &["run", "--scope", "del", "--", "true"]);
    assert_eq!(code, 0, "the next run works: {env}");
}

/// One store of its own (its own connections and remembered cells), as another process would have.
fn library_store(etcd: &Etcd) -> (CoreComponent, Store) {
    let mut core = CoreComponent::load().unwrap();
    let store = open_store(&mut core, Some(&etcd.spec()), false).unwrap();
    (core, store)
}

/// `op` with `request` on the cell `preview/cached` of `store`; every snapshot it decided on goes to `seen`.
fn decide(
    (core, store): &mut (CoreComponent, Store),
    op: &str,
    request: Value,
    seen: &mut Vec<Value>,
) -> Result<Value, HostError> {
    store.transact(core, "preview", "cached", |core, cell, now| {
        seen.push(cell["files"].clone());
        let mut request = request.clone();
        if op == "fenced-write" {
            // A lock transaction of `locks.apply`, not a JSON operation.
            let text = |k: &str| request[k].as_str().unwrap_or_default().to_owned();
            let epoch = request["epoch"].as_u64().unwrap_or_default();
            let write =
                FencedWriteRequest { holder: text("holder"), epoch, file: text("file"), content: text("content") };
            return core.fenced_write(&cell, now, write);
        }
        request["cell"] = cell;
        request["nowMs"] = now.into();
        core.invoke(op, &request)
    })
}

/// Acquire, one fenced write, release: the lease cycle of the bench. Answers the epoch granted.
fn cycle(s: &mut (CoreComponent, Store), holder: &str, seen: &mut Vec<Value>) -> u64 {
    let lock = decide(s, "lock-acquire", json!({ "holder": holder, "ttlMs": 60_000 }), seen).unwrap();
    let epoch = lock["lock"]["epoch"].as_u64().unwrap();
    let fence = json!({ "holder": holder, "epoch": epoch, "file": "state.json", "content": holder });
    decide(s, "fenced-write", fence, seen).unwrap();
    decide(s, "lock-release", json!({ "holder": holder, "epoch": epoch }), seen).unwrap();
    epoch
}

/// A store decides on the cell as it last committed it: a lease cycle is exactly three etcd transactions
/// and no read, counted by the server. When another client changed the cell meanwhile, the compare refuses
/// the decision made on the remembered cell, the same round trip answers the cell as it is now, and the
/// store decides again on that: one more transaction, still no read.
fn a_cycle_is_three_round_trips_and_a_stale_cell_is_read_fresh(etcd: &Etcd) {
    let (mut a, mut b) = (library_store(etcd), library_store(etcd));
    let mut seen = Vec::new();
    assert_eq!(cycle(&mut a, "a1", &mut seen), 1);
    let before = etcd.kv_requests();
    assert_eq!(cycle(&mut a, "a2", &mut seen), 2);
    let after = etcd.kv_requests();
    assert_eq!((after.0 - before.0, after.1 - before.1), (3, 0), "a cycle on the remembered cell: 3 transactions");

    // Behind a's back, b takes the lock and releases it: epoch 3 was granted, the cell is free again.
    assert_eq!(cycle(&mut b, "b", &mut seen), 3);
    let before = etcd.kv_requests();
    seen.clear();
    let lock = decide(&mut a, "lock-acquire", json!({ "holder": "a3", "ttlMs": 60_000 }), &mut seen).unwrap();
    let after = etcd.kv_requests();
    let epochs: Vec<Value> = seen.iter().map(|files| files["epoch.json"].clone()).collect();
    assert_eq!(epochs.len(), 2, "decided on the remembered cell, then on the cell as it is: {seen:?}");
    assert!(
        epochs[0].as_str().unwrap().contains("\"epoch\": 2") && epochs[1].as_str().unwrap().contains("\"epoch\": 3")
    );
    assert_eq!(lock["lock"]["epoch"], 4, "granted above b's epoch, not again at 3");
    assert_eq!((after.0 - before.0, after.1 - before.1), (2, 0), "the refused compare answered the cell");

    // b holds the lock now: a's remembered cell (its own grant) is refused, and the cell as it is refuses a.
    decide(&mut a, "lock-release", json!({ "holder": "a3", "epoch": 4 }), &mut seen).unwrap();
    decide(&mut b, "lock-acquire", json!({ "holder": "b", "ttlMs": 60_000 }), &mut seen).unwrap();
    seen.clear();
    let e = decide(&mut a, "lock-acquire", json!({ "holder": "a4", "ttlMs": 60_000 }), &mut seen).unwrap_err();
    assert_eq!((e.code.as_str(), e.details["lock"]["holder"].clone()), ("LOCK_HELD", json!("b")), "{e:?}");
    assert_eq!(seen.len(), 2, "the refusal was decided on the cell as it is: {seen:?}");
    assert_eq!(etcd.get("/baton/preview/cached/lock.json").map(|l| l.contains("\"holder\": \"b\"")), Some(true));
}

fn unreachable_and_silent_endpoints_end_in_bounded_time(t: &TempDir, etcd: &Etcd) {
    // A port nobody listens on, and a listener that accepts and never answers (a hung server).
    let refused = format!("http://127.0.0.1:{}", common::etcd::free_port());
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_url = format!("http://127.0.0.1:{}", silent.local_addr().unwrap().port());
    for endpoint in [&refused, &silent_url] {
        let started = Instant::now();
        let out = command(&t.0, &with_json(&["run", "--scope", "unreachable", "--", "true"]))
            .env("BATON_STORE", format!("etcd:{endpoint}"))
            .env("BATON_STORE_BUDGET_MS", "2000")
            .output()
            .unwrap();
        let took = started.elapsed();
        let env = envelope(&out);
        assert_eq!(env["error"]["code"], "STORE_CONTENDED", "{endpoint}: {env}");
        assert!(env["error"]["message"].as_str().unwrap().contains(endpoint.as_str()), "names the endpoint: {env}");
        assert!(took < Duration::from_secs(15), "{endpoint}: bounded by the budget, took {took:?}");
    }
    // A dead endpoint before a live one: the live one answers.
    let store = format!("etcd:{refused},{}", etcd.members[0].url());
    let (code, env) = json_in(&t.0, &store, &["run", "--scope", "failover", "--", "true"]);
    assert_eq!(code, 0, "{env}");
    drop(silent);
}

/// Runs `openssl` in `dir`, asserting success.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let ok = std::process::Command::new("openssl").current_dir(dir).args(args).stderr(Stdio::null()).status();
    assert!(ok.is_ok_and(|s| s.success()), "openssl {args:?} (scripts/setup.sh installs it)");
}

/// A CA and a server certificate for 127.0.0.1 (made here with openssl), an etcd serving TLS with them:
/// `BATON_ETCD_CA` makes a bare `host:port` an https endpoint that verifies; without it the server's
/// certificate is refused at an `https://` endpoint (`STORE_PERMISSION`, naming the TLS variables).
fn tls_with_a_ca_file(t: &TempDir) {
    let dir = t.0.join("tls");
    std::fs::create_dir_all(&dir).unwrap();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    openssl(
        &dir,
        &[
            &["req", "-x509"][..],
            &ec,
            &["-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj", "/CN=baton-test-ca"],
        ]
        .concat(),
    );
    openssl(
        &dir,
        &[&["req"][..], &ec, &["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"]].concat(),
    );
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        &dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-out",
            "server.pem",
            "-days",
            "1",
            "-extfile",
            "ext.cnf",
        ],
    );
    let (client, peer) = (common::etcd::free_port(), common::etcd::free_port());
    let url = format!("https://127.0.0.1:{client}");
    let peer_url = format!("http://127.0.0.1:{peer}");
    let child = std::process::Command::new("etcd")
        .current_dir(&dir)
        .args(["--name", "tls", "--data-dir", "data", "--listen-client-urls", &url, "--advertise-client-urls", &url])
        .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
        .args([
            "--initial-cluster",
            &format!("tls={peer_url}"),
            "--cert-file",
            "server.pem",
            "--key-file",
            "server.key",
        ])
        .args(["--log-level", "warn", "--logger", "zap"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    /// Kills the TLS etcd (this test's own child) however the test ends.
    struct Stop(Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _stop = Stop(child);
    let ca = dir.join("ca.pem").display().to_string();
    let run = |with_ca: bool| {
        let mut cmd = command(&t.0, &with_json(&["lock", "acquire", "--scope", "tls", "--holder", "a"]));
        // A bare host:port is https when a CA is given; without one, https must be named.
        let spec = if with_ca { format!("etcd:127.0.0.1:{client}") } else { format!("etcd:{url}") };
        cmd.env("BATON_STORE", spec).env("BATON_STORE_BUDGET_MS", "3000");
        if with_ca {
            cmd.env("BATON_ETCD_CA", &ca);
        }
        let out = cmd.output().unwrap();
        (out.status.code(), envelope(&out))
    };
    wait_for("the TLS etcd to listen", Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", client)).is_ok()
    });
    let started = Instant::now();
    let (code, env) = loop {
        let (code, env) = run(true);
        // Listening is not yet serving: a member that just started may still refuse a request.
        if code == Some(0) || started.elapsed() > Duration::from_secs(20) {
            break (code, env);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!((code, env["store"].clone()), (Some(0), json!(format!("etcd:{url}"))), "{env}");
    let (code, env) = run(false);
    assert_eq!((code, env["error"]["code"].clone()), (Some(1), json!("STORE_PERMISSION")), "{env}");
    assert!(env["error"]["message"].as_str().unwrap().contains("BATON_ETCD_CA"), "{env}");
}

fn credentials_work_and_never_show(t: &TempDir, etcd: &Etcd) {
    etcd.etcdctl(&["user", "add", "root:rootpw"]).unwrap();
    etcd.etcdctl(&["user", "add", "ci:s3cret-pw"]).unwrap();
    etcd.etcdctl(&["role", "add", "baton"]).unwrap();
    etcd.etcdctl(&["role", "grant-permission", "baton", "--prefix=true", "readwrite", "/baton/"]).unwrap();
    etcd.etcdctl(&["user", "grant-role", "ci", "baton"]).unwrap();
    etcd.etcdctl(&["auth", "enable"]).unwrap();
    let url = etcd.members[0].url();
    let run = |store: &str, user: Option<(&str, &str)>| {
        let mut cmd = command(&t.0, &with_json(&["run", "--scope", "auth", "--", "true"]));
        cmd.env("BATON_STORE", store).env("BATON_STORE_BUDGET_MS", "5000");
        if let Some((u, p)) = user {
            cmd.env("BATON_ETCD_USER", u).env("BATON_ETCD_PASSWORD", p);
        }
        let out = cmd.output().unwrap();
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        (out.status.code(), envelope(&out), text)
    };
    let (code, env, text) = run(&format!("etcd:{url}"), Some(("ci", "s3cret-pw")));
    assert_eq!(code, Some(0), "{env}");
    assert!(!text.contains("s3cret"), "the password never shows: {text}");
    let (code, env, text) = run(&format!("etcd:http://ci:s3cret-pw@127.0.0.1:{}", etcd.members[0].client), None);
    assert_eq!(code, Some(0), "{env}");
    assert_eq!(env["store"], format!("etcd:{url}"));
    assert!(!text.contains("s3cret"), "the password in the URL never shows: {text}");
    let (code, env, text) = run(&format!("etcd:{url}"), Some(("ci", "wrong-pw")));
    assert_eq!((code, env["error"]["code"].clone()), (Some(1), json!("STORE_PERMISSION")), "{env}");
    assert!(env["error"]["message"].as_str().unwrap().contains("BATON_ETCD_USER"), "{env}");
    assert!(!text.contains("wrong-pw"), "{text}");
    let (code, env, _) = run(&format!("etcd:{url}"), None);
    assert_eq!((code, env["error"]["code"].clone()), (Some(1), json!("STORE_PERMISSION")), "no user: {env}");
}
