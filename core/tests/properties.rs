//! Properties of the cell encodings (`baton_core::names`, op `cell-path`, op `scope-names`) over tricky and
//! seeded random names:
//!
//! - injective: distinct valid `(env, scope)` pairs get distinct directories and distinct refs, and no
//!   segment of one encoding equals a segment of the other for another name;
//! - contained: a cell directory is exactly two plain relative components (no `..`, `.`, separator, NUL,
//!   hidden name, absolute path), and `cell-path` refuses every name that is not valid;
//! - git-valid: every cell ref under every prefix passes git's refname rules, and the rule check used for
//!   that agrees with the real `git check-ref-format` on a sample of valid and invalid refs;
//! - decodable: `scope-names` maps each segment back to its name and nothing else to a name.

mod fuzz_bodies;
#[allow(dead_code)]
#[path = "sim/rng.rs"]
mod rng;

use baton_core::api::invoke;
use baton_core::names::{decode_segment, path_segment, ref_segment};
use baton_core::scope::validate_name;
use fuzz_bodies::{assert_plain_dir, check_ref_component, check_ref_format};
use rng::Rng;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Component, Path};

/// Names that stress the encodings: case, Unicode, `%`, `=`, dots, separators, empty, control characters,
/// git's special sequences, and the length limit on both sides.
fn tricky_names() -> Vec<String> {
    let mut names: Vec<String> = [
        "pr-1",
        "pr-01",
        "main",
        "Main",
        "MAIN",
        "branch-feat-x",
        "branch-Feat-X",
        "",
        ".",
        "..",
        "...",
        ".a",
        "a.",
        "a..b",
        "a.b",
        "x.lock",
        "x.LOCK",
        ".lock",
        "lock",
        "=",
        "=2e",
        "=2e2e",
        "=zz",
        "%2e%2e",
        "%2F",
        "a/b",
        "a\\b",
        "/",
        "/abs",
        "é",
        "e\u{301}",
        "☃",
        "a\0b",
        " a",
        "a ",
        "a\tb",
        "a\u{7f}",
        "-",
        "--x",
        "-x",
        "_",
        "_locks",
        "@",
        "a@{b",
        "a~b",
        "a^b",
        "a:b",
        "a?b",
        "a*b",
        "a[b",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .collect();
    names.push("a".repeat(200));
    names.push("a".repeat(201));
    names.push(format!(".{}", "a".repeat(199)));
    names.push(format!("{}.lock", "b".repeat(195)));
    names.push(format!("{}..", "c".repeat(198)));
    names
}

/// `n` random names over the valid alphabet, biased towards dots, dashes and short lengths.
fn random_names(seed: u64, n: usize) -> Vec<String> {
    const ALPHABET: &[u8] = b"aA0._-.-.zZ9";
    let mut rng = Rng::new(seed, 7);
    (0..n)
        .map(|_| {
            let len = if rng.chance(20) { rng.range(190, 200) } else { rng.range(1, 8) };
            (0..len).map(|_| char::from(rng.pick(ALPHABET))).collect()
        })
        .collect()
}

fn cell_path(env: &str, scope: &str) -> Result<(String, String), String> {
    match invoke("cell-path", &json!({ "env": env, "scope": scope }).to_string()) {
        Ok(text) => {
            let v: Value = serde_json::from_str(&text).expect("cell-path answers JSON");
            Ok((v["dir"].as_str().unwrap_or_default().to_owned(), v["ref"].as_str().unwrap_or_default().to_owned()))
        }
        Err(e) => Err(e.code.as_str().to_owned()),
    }
}

#[test]
fn cell_path_is_injective_and_refuses_invalid_names() {
    let mut names = tricky_names();
    names.extend(random_names(1, 60));
    names.sort();
    names.dedup();
    let mut dirs: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut refs: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut cells = 0;
    for env in &names {
        for scope in &names {
            let valid = validate_name("env", env).is_ok() && validate_name("scope", scope).is_ok();
            match cell_path(env, scope) {
                Ok((dir, reference)) => {
                    assert!(valid, "cell-path accepted ({env:?}, {scope:?})");
                    let pair = (env.clone(), scope.clone());
                    if let Some(other) = dirs.insert(dir.clone(), pair.clone()) {
                        panic!("{other:?} and {pair:?} share the directory {dir:?}");
                    }
                    if let Some(other) = refs.insert(reference.clone(), pair.clone()) {
                        panic!("{other:?} and {pair:?} share the ref {reference:?}");
                    }
                    cells += 1;
                }
                Err(code) => assert!(!valid && code == "USAGE", "({env:?}, {scope:?}) refused with {code}"),
            }
        }
    }
    assert!(cells > 1000, "the sample has enough valid cells ({cells})");
}

#[test]
fn segments_are_injective_across_both_encodings() {
    let mut names: Vec<String> = tricky_names().into_iter().filter(|n| validate_name("scope", n).is_ok()).collect();
    names.extend(random_names(2, 20_000));
    names.sort();
    names.dedup();
    // Every segment of either encoding names exactly one name.
    let mut owner: BTreeMap<String, &str> = BTreeMap::new();
    for name in &names {
        for seg in [path_segment(name), ref_segment(name)] {
            let previous = owner.insert(seg.clone(), name);
            assert!(previous.is_none_or(|p| p == name), "{previous:?} and {name:?} share the segment {seg:?}");
        }
    }
    assert!(names.len() > 5_000, "{} distinct names", names.len());
}

#[test]
fn cells_never_escape_the_store() {
    let mut names = tricky_names();
    names.extend(random_names(3, 2_000));
    let store = Path::new("/srv/baton");
    for env in ["preview", "production", "_locks", ".", ".."] {
        for scope in &names {
            let Ok((dir, _)) = cell_path(env, scope) else { continue };
            let parts: Vec<&str> = dir.split('/').collect();
            assert_eq!(parts.len(), 2, "{dir:?} is env/scope");
            for part in parts {
                assert_plain_dir(part, &format!("the cell of ({env:?}, {scope:?})"));
            }
            let path = Path::new(&dir);
            assert!(path.is_relative(), "{dir:?}");
            assert!(path.components().all(|c| matches!(c, Component::Normal(_))), "{dir:?}");
            assert!(store.join(path).starts_with(store));
            assert_eq!(store.join(path).components().count(), store.components().count() + 2);
        }
    }
}

#[test]
fn every_cell_ref_is_a_valid_git_ref() {
    let mut names = tricky_names();
    names.extend(random_names(4, 5_000));
    for prefix in ["baton-receipts", "sponson-receipts", "ci/leases"] {
        for scope in &names {
            // The ref segment of any name at all, valid or not, is a valid component.
            assert_eq!(check_ref_component(&ref_segment(scope)), Ok(()), "{scope:?}");
            let Ok((_, reference)) = cell_path("preview", scope) else { continue };
            let full = format!("refs/heads/{prefix}/{reference}");
            assert_eq!(check_ref_format(&full), Ok(()), "{full:?}");
        }
    }
}

#[test]
fn the_ref_rule_check_agrees_with_git() {
    let mut sample: Vec<String> = Vec::new();
    let mut names = tricky_names();
    names.extend(random_names(5, 150));
    for n in &names {
        if n.contains('\0') {
            continue; // cannot be a process argument; the rule check refuses it (below)
        }
        sample.push(format!("refs/heads/baton-receipts/preview/{}", ref_segment(n)));
        sample.push(format!("refs/heads/baton-receipts/preview/{n}")); // the raw name: often invalid
        sample.push(format!("refs/heads/{n}/x"));
    }
    sample.extend(
        [
            "refs/heads/a.",
            "refs/heads/a/",
            "refs//a",
            "refs/heads/@",
            "@",
            "refs/heads/a@b",
            "x",
            "refs/heads/a.lock/b",
        ]
        .map(str::to_owned),
    );
    sample.sort();
    sample.dedup();
    let (mut valid, mut invalid) = (0, 0);
    for name in &sample {
        let out = std::process::Command::new("git")
            .args(["check-ref-format", name])
            .output()
            .expect("git is installed (the git store needs it too)");
        let git_ok = match out.status.code() {
            Some(0) => true,
            Some(1) => false,
            other => panic!("git check-ref-format {name:?} exited {other:?}"),
        };
        assert_eq!(check_ref_format(name).is_ok(), git_ok, "{name:?}: ours {:?}, git {git_ok}", check_ref_format(name));
        if git_ok {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    assert!(valid > 100 && invalid > 50, "the sample has both kinds ({valid} valid, {invalid} invalid)");
    assert!(check_ref_format("refs/heads/a\0b").is_err());
}

#[test]
fn scope_names_decode_exactly_the_encodings() {
    let mut names: Vec<String> = tricky_names().into_iter().filter(|n| validate_name("scope", n).is_ok()).collect();
    // Only valid names are scopes: a long name the stores would hex-encode is refused as too long.
    names.extend(random_names(6, 500).into_iter().filter(|n| validate_name("scope", n).is_ok()));
    let mut dirs: Vec<String> = Vec::new();
    for n in &names {
        dirs.push(path_segment(n));
        dirs.push(ref_segment(n));
    }
    let answer = invoke("scope-names", &json!({ "dirs": dirs }).to_string()).expect("scope-names answers");
    let scopes: Value = serde_json::from_str(&answer).expect("JSON");
    let scopes = scopes["scopes"].as_array().expect("a list");
    for (i, n) in names.iter().enumerate() {
        assert_eq!(scopes[2 * i], json!(n), "path segment of {n:?}");
        assert_eq!(scopes[2 * i + 1], json!(n), "ref segment of {n:?}");
    }
    // Not encodings: other hex spellings, odd hex, invalid UTF-8, hidden and temp files, raw invalid names.
    let strays = ["=41", "=2E2E", "=2e2e2", "=zz", "=", "=ff", ".tmp", ".lock.mutex", "a b", "=612f62", "=2e2e00"];
    let answer = invoke("scope-names", &json!({ "dirs": strays }).to_string()).expect("scope-names answers");
    let scopes: Value = serde_json::from_str(&answer).expect("JSON");
    assert_eq!(scopes["scopes"], json!(vec![Value::Null; strays.len()]), "{strays:?}");
    // decode_segment itself inverts both encodings for every valid name.
    for n in &names {
        assert_eq!(decode_segment(&path_segment(n)).as_deref(), Some(n.as_str()));
        assert_eq!(decode_segment(&ref_segment(n)).as_deref(), Some(n.as_str()));
    }
}

/// Negative control: the properties above would see a colliding or escaping encoding.
#[test]
fn the_checks_catch_a_broken_encoding() {
    // A lossy encoding (dots dropped) collides; an unencoded `..` escapes.
    let lossy = |n: &str| n.replace('.', "");
    assert_eq!(lossy("a.b"), lossy("ab"));
    let escaped = std::panic::catch_unwind(|| assert_plain_dir("..", "control"));
    assert!(escaped.is_err(), "`..` is caught");
    assert!(check_ref_format(&format!("refs/heads/x/{}", "a..b")).is_err());
    assert!(check_ref_format(&format!("refs/heads/x/{}", ref_segment("a..b"))).is_ok());
}
