//! Ownership end to end with the CLI: the succession journey, foreign resources, intents after a crash,
//! destroy, approval, parent-object locks, and stores laid out by the original tool.

mod common;

use common::{TempDir, forget_all, given, ledger_keys as keys, sh};
use serde_json::{Value, json};

#[test]
fn the_succession_journey() {
    let t = TempDir::new("journey");
    common::succession_journey(&t.0, &|args| t.json(args), &|env, scope| t.receipt(env, scope));
}

#[test]
fn a_pr_from_main_inherits_nothing_and_a_busy_predecessor_is_handed_over_later() {
    let t = TempDir::new("pred");
    let record = sh("baton ledger record --adapter a --key k --id 1");
    assert_eq!(t.json(&["run", "--branch", "main", "--", "sh", "-c", &record]).0, 0);
    let (_, env) = t.json(&["run", "--branch", "main", "--pr", "5", "--", "true"]);
    assert_eq!(env["warnings"], json!([]), "a PR whose head is main inherits nothing");
    assert_eq!(keys(&t.receipt("preview", "main")["ledger"]), ["k:baton"]);

    // The same key is main's now: the branch records one of its own (two scopes never own one resource).
    let (code, env) = t.json(&["run", "--branch", "feat", "--", "sh", "-c", &record]);
    assert_eq!(code, 1, "{env}");
    let record = sh("baton ledger record --adapter a --key kf --id 2");
    assert_eq!(t.json(&["run", "--branch", "feat", "--", "sh", "-c", &record]).0, 0);
    assert_eq!(t.json(&["lock", "acquire", "--branch", "feat", "--holder", "busy", "--ttl", "1m"]).0, 0);
    let (code, env) = t.json(&["run", "--branch", "feat", "--pr", "6", "--", "true"]);
    assert_eq!(code, 0);
    assert!(
        env["warnings"]
            .to_string()
            .contains("Scope `branch-feat` is busy; its resources will be handed over to `pr-6` on the next run."),
        "{env}"
    );
    assert_eq!(keys(&t.receipt("preview", "branch-feat")["ledger"]), ["kf:baton"]);
    assert_eq!(t.json(&["lock", "release", "--branch", "feat", "--holder", "busy"]).0, 0);
    assert_eq!(t.json(&["run", "--branch", "feat", "--pr", "6", "--", "true"]).0, 0);
    assert_eq!(t.receipt("preview", "branch-feat")["ledger"], json!([]));
    assert_eq!(keys(&t.receipt("preview", "pr-6")["ledger"]), ["kf:baton"]);
}

#[test]
fn another_scopes_resource_may_be_relied_on_but_not_changed() {
    let t = TempDir::new("foreign");
    let create = sh("baton ledger record --adapter vercel --key shared --id s1");
    assert_eq!(t.json(&["run", "--scope", "pr-42", "--", "sh", "-c", &create]).0, 0);
    let (code, env) =
        t.json(&["ledger", "check", "--scope", "pr-43", "--adapter", "vercel", "--key", "shared", "--change"]);
    assert_eq!(code, 1);
    assert_eq!(env["error"]["code"], "OWNED_BY_OTHER_SCOPE");
    assert_eq!(env["error"]["owner"], "pr-42");
    let rely = sh("baton ledger check --adapter vercel --key shared");
    assert_eq!(t.json(&["run", "--scope", "pr-43", "--", "sh", "-c", &rely]).0, 0);
    assert_eq!(keys(&t.receipt("preview", "pr-43")["ledger"]), ["shared:adopted"]);
    let (_, status) = t.json(&["status", "--scope", "pr-43"]);
    assert_eq!(status["foreignCount"], 1);
    let forget = forget_all(&t.0);
    assert_eq!(t.json(&["destroy", "--scope", "pr-43", "--", "sh", "-c", &forget]).0, 0);
    assert!(given(&t.0).is_empty(), "an adopted resource is only forgotten");
    assert_eq!(keys(&t.receipt("preview", "pr-42")["ledger"]), ["shared:baton"]);
}

#[test]
fn an_intent_survives_a_crash_and_destroy_never_drops_it_on_a_guess() {
    let t = TempDir::new("intent");
    // A run that crashed right after announcing a create: its lock and its checkpoint stay behind.
    let (_, lock) = t.json(&["lock", "acquire", "--scope", "pr-1", "--holder", "run-crashed", "--ttl", "300ms"]);
    let epoch = lock["lock"]["epoch"].to_string();
    let (code, _) = t.json(&[
        "ledger",
        "intend",
        "--scope",
        "pr-1",
        "--adapter",
        "neon",
        "--key",
        "db",
        "--holder",
        "run-crashed",
        "--epoch",
        &epoch,
    ]);
    assert_eq!(code, 0);
    assert_eq!(t.receipt("preview", "pr-1")["status"], "failed", "a checkpoint is failed until the run finishes");
    std::thread::sleep(std::time::Duration::from_millis(350));
    // The successor continues from the checkpoint: the intent is there to resolve.
    let (code, env) = t.json(&["run", "--scope", "pr-1", "--", "true"]);
    assert_eq!(code, 0);
    assert_eq!(env["preempted"]["holder"], "run-crashed");
    assert_eq!(t.receipt("preview", "pr-1")["lockPreempted"], "run-crashed");
    assert_eq!(keys(&t.receipt("preview", "pr-1")["ledger"]), ["db:intent"]);
    // A destroy that cannot locate it: INTENT_UNRESOLVED, and the intent stays.
    let (code, env) = t.json(&["destroy", "--scope", "pr-1", "--", "sh", "-c", "cat > /dev/null"]);
    assert_eq!(code, 1);
    assert_eq!(env["error"]["code"], "INTENT_UNRESOLVED");
    assert_eq!(keys(&t.receipt("preview", "pr-1")["ledger"]), ["db:intent"]);
    // A successor that finds it claims it.
    let claim = sh("baton ledger record --adapter neon --key db --id br-1");
    assert_eq!(t.json(&["run", "--scope", "pr-1", "--", "sh", "-c", &claim]).0, 0);
    assert_eq!(keys(&t.receipt("preview", "pr-1")["ledger"]), ["db:baton"]);
}

#[test]
fn production_needs_a_named_approver_before_anything_is_locked() {
    let t = TempDir::new("approval");
    let marker = t.0.join("ran");
    let touch = format!("touch {}", marker.display());
    for approver in [None, Some("   ")] {
        let mut args = vec!["run", "--env", "production", "--scope", "main"];
        if let Some(a) = approver {
            args.extend(["--approved-by", a]);
        }
        args.extend(["--", "sh", "-c", &touch]);
        let (code, env) = t.json(&args);
        assert_eq!((code, env["error"]["code"].as_str()), (2, Some("ENV_NOT_APPROVED")));
    }
    assert!(!marker.exists() && !t.0.join("store").exists(), "nothing ran, nothing was locked or written");
    let (code, _) = t.json(&[
        "run",
        "--env",
        "production",
        "--scope",
        "main",
        "--approved-by",
        "  alice ",
        "--",
        "sh",
        "-c",
        &touch,
    ]);
    assert_eq!(code, 0);
    assert_eq!(t.receipt("production", "main")["approvedBy"], "alice");
}

#[test]
fn parent_object_locks_serialise_writers_and_refuse_secrets() {
    let t = TempDir::new("object");
    let list = t.0.join("list.txt");
    std::fs::write(&list, "").unwrap();
    // Read-modify-write of one shared list: loses items unless every writer is excluded.
    let writers: Vec<_> = (0..6)
        .map(|i| {
            let script = format!("l=$(cat {p}); sleep 0.05; printf '%s\\n%s\\n' \"$l\" {i} > {p}", p = list.display());
            let env = if i % 2 == 0 { "preview" } else { "production" };
            t.baton(&[
                "lock-object",
                "auth0:tenant:client:abc",
                "--wait",
                "--poll-interval",
                "50ms",
                "--",
                "sh",
                "-c",
                &script,
            ])
            .env("BATON_ENV", env)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for mut w in writers {
        assert!(w.wait().unwrap().success());
    }
    let mut items: Vec<String> =
        std::fs::read_to_string(&list).unwrap().lines().filter(|l| !l.is_empty()).map(str::to_owned).collect();
    items.sort();
    assert_eq!(items, ["0", "1", "2", "3", "4", "5"], "no list item lost");
    let out = t
        .baton(&["lock-object", "http://u:hunter22@api/list", "--json", "--", "true"])
        .env("BATON_SECRET_VARS", "TOKEN")
        .env("TOKEN", "hunter22")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(common::envelope(&out)["error"]["code"], "USAGE");
}

#[test]
fn a_store_laid_out_by_the_original_tool_is_read() {
    let t = TempDir::new("compat");
    let cell = t.0.join("store/preview/pr-7");
    std::fs::create_dir_all(&cell).unwrap();
    std::fs::write(cell.join("lock.json"), "{\n  \"holder\": \"run-old12345\",\n  \"acquiredAt\": \"2026-10-10T12:00:00.000Z\",\n  \"expiresAt\": \"2026-10-10T12:15:00.000Z\"\n}\n").unwrap();
    let receipt = json!({
        "version": 2, "runId": "run-old12345", "environment": "preview", "scope": "pr-7", "status": "complete",
        "startedAt": "2026-10-10T12:00:00.000Z", "finishedAt": "2026-10-10T12:01:00.000Z", "plan": {"hash": "h"},
        "ctx": {"env": "preview", "git": {"branch": "x", "sha": "abc", "short_sha": "abc"}, "pr": {"number": 7}, "scope": "pr-7"},
        "lines": {"db": {"id": "db", "status": "applied"}},
        "ledger": [{"adapter": "neon", "op": "branch", "provider": {"project": "p"}, "key": "br", "id": "br-9", "hash": "ff", "createdBy": "sponson", "line": "db"}],
        "history": [{"sha": "abc", "at": "2026-10-10T12:01:00.000Z"}], "hashKey": "00112233445566778899aabbccddeeff"
    });
    std::fs::write(cell.join("latest.json"), serde_json::to_string_pretty(&receipt).unwrap()).unwrap();
    let (_, status) = t.json(&["status", "--scope", "pr-7"]);
    assert_eq!(status["lockState"], "expired");
    assert_eq!(status["lock"]["epoch"], 0);
    assert_eq!(status["owns"][0]["id"], "br-9");
    assert_eq!(
        status["owns"][0]["createdBy"], "sponson",
        "the original's sponson entries are owned, printed as written"
    );
    let (_, list) = t.json(&["ledger", "list", "--scope", "pr-7"]);
    assert_eq!(list["owns"].as_array().unwrap().len(), 1);
    // Taking it over keeps everything the original wrote.
    let (code, env) = t.json(&["run", "--scope", "pr-7", "--", "true"]);
    assert_eq!(code, 0, "{env}");
    assert_eq!(env["lock"]["epoch"], 1);
    let after = t.receipt("preview", "pr-7");
    assert_eq!(after["hashKey"], "00112233445566778899aabbccddeeff");
    assert_eq!(after["ledger"][0]["hash"], "ff");
    assert_eq!(after["history"][0]["sha"], "abc");
}

#[test]
fn a_corrupt_receipt_is_refused_and_kept() {
    let t = TempDir::new("corrupt-receipt");
    let cell = t.0.join("store/preview/pr-1");
    std::fs::create_dir_all(&cell).unwrap();
    std::fs::write(cell.join("latest.json"), "{ not json").unwrap();
    let marker = t.0.join("ran");
    let (code, env) = t.json(&["run", "--scope", "pr-1", "--", "touch", marker.to_str().unwrap()]);
    assert_eq!((code, env["error"]["code"].as_str()), (1, Some("RECEIPT_CORRUPT")));
    assert!(!marker.exists(), "nothing ran");
    assert_eq!(std::fs::read_to_string(cell.join("latest.json")).unwrap(), "{ not json");
    assert_eq!(t.json(&["lock", "status", "--scope", "pr-1"]).1["lock"], Value::Null, "and the lease was released");
}
