//! The pure parts of the git store's transactions (issue 10), so that the hosts cannot drift: the commit of
//! a change set (its message, what it is for messages, and the `git fast-import` stream that builds it) and
//! the parsing of `git cat-file --batch` output. Hosts run git; the core writes and reads its text.

use crate::cell::Change;
use crate::error::CoreError;
use serde::Serialize;
use serde_json::Value;

/// The commit of a change set on the cell `env/scope` stored at `dir` of its ref: `{message, what,
/// stream}`. `tip` is the commit to build on (`None`: a new root commit holding only the README, message
/// `Start receipts for <env>/<scope>`); `old_lock` the cell's `lock.json` text before the change (for the
/// message). The stream, fed to `git fast-import --quiet --force --date-format=now`, sets `README.md`,
/// applies the changes under `dir/` on `refs/baton/new` and ends with `get-mark :2` (git prints the new
/// commit). A change outside the cell is `INTERNAL` (the core never asks for one).
///
/// `seed` (paths in the ref's tree, texts) are files a new cell ref starts with: what the original tool's
/// legacy `sponson/receipts` branch held for the cell (only with `tip` `None`; the changes win over them,
/// and the root commit says `(from sponson/receipts)`).
pub fn commit(
    env: &str,
    scope: &str,
    dir: &str,
    tip: Option<&str>,
    changes: &[Change],
    old_lock: Option<&str>,
    seed: &[(String, String)],
) -> Result<CommitStream, CoreError> {
    let mut files = cell_changes(dir, changes)?;
    let mut root_message = format!("Start receipts for {env}/{scope}");
    if tip.is_none() && !seed.is_empty() {
        if seed.iter().any(|(p, _)| !p.starts_with(&format!("{dir}/")) || p.contains("/../")) {
            return Err(CoreError::internal("a seed file outside the cell"));
        }
        let changed: Vec<String> = files.iter().map(|(p, _)| p.clone()).collect();
        let kept = seed.iter().filter(|(p, _)| !changed.contains(p)).map(|(p, t)| (p.clone(), Some(t.clone())));
        files = kept.chain(files).collect();
        root_message.push_str(LEGACY_FROM);
    }
    if tip.is_some_and(|t| t.is_empty() || !t.chars().all(|c| c.is_ascii_hexdigit())) {
        return Err(CoreError::internal(format!("not a commit id: {tip:?}")));
    }
    let (message, what) = describe(env, scope, changes, old_lock);
    let readme = crate::gitstore::readme_for(env);
    let mut s = String::new();
    let data = |s: &mut String, text: &str| {
        s.push_str(&format!("data {}\n", text.len()));
        s.push_str(text);
        s.push('\n');
    };
    s.push_str("reset refs/baton/new\n");
    let from = match tip {
        Some(p) => format!("from {p}\n"),
        None => {
            s.push_str("commit refs/baton/new\nmark :1\ncommitter baton <baton@localhost> now\n");
            data(&mut s, &root_message);
            s.push_str("M 100644 inline README.md\n");
            data(&mut s, readme);
            "from :1\n".to_owned()
        }
    };
    s.push_str("commit refs/baton/new\nmark :2\ncommitter baton <baton@localhost> now\n");
    data(&mut s, &message);
    s.push_str(&from);
    s.push_str("M 100644 inline README.md\n");
    data(&mut s, readme);
    for (path, content) in &files {
        match content {
            Some(text) => {
                s.push_str(&format!("M 100644 inline {path}\n"));
                data(&mut s, text);
            }
            None => s.push_str(&format!("D {path}\n")),
        }
    }
    s.push_str("get-mark :2\n");
    Ok(CommitStream { message, what: what.to_owned(), stream: s })
}

/// The commit [`commit`] built: its message, what it is for messages, and the `git fast-import` stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommitStream {
    /// The commit message (`lock preview/pr-1 h (epoch 1)`).
    pub message: String,
    /// What the commit is, for messages (`the lock`, `a receipt`).
    pub what: String,
    /// The stream to feed `git fast-import`; it ends with `get-mark :2`.
    pub stream: String,
}

/// What a root commit seeded from the original tool's legacy branch adds to its message.
pub const LEGACY_FROM: &str = " (from sponson/receipts)";

/// The files of a change set as paths in the ref's tree; refuses anything outside the cell.
fn cell_changes(dir: &str, changes: &[Change]) -> Result<Vec<(String, Option<String>)>, CoreError> {
    changes
        .iter()
        .map(|change| {
            let (file, content) = match change {
                Change::Write { file, content } => (file, Some(content.clone())),
                Change::Delete { file } => (file, None),
            };
            if file.is_empty() || file.contains(['/', '\\', '\n', '"']) || file.starts_with('.') {
                return Err(CoreError::internal(format!("a change outside the cell: {file:?}")));
            }
            Ok((format!("{dir}/{file}"), content))
        })
        .collect()
}

/// The commit message of a change set and what it is, for messages: `receipt <env>/<scope> <runId>
/// (<status>)` ("a receipt"), `unlock <env>/<scope> <holder>` ("the unlock"), `renew ...` ("the
/// renewal"), `lock <env>/<scope> <holder> (epoch <n>)` ("the lock"), else `update <env>/<scope>`. A
/// batch (`cell-steps`) that writes a receipt with a grant or a release says both: `lock <env>/<scope>
/// <holder> (epoch <n>), receipt <runId> (<status>)` and `receipt <env>/<scope> <runId> (<status>), unlock
/// <holder>` ("a receipt").
pub fn describe(env: &str, scope: &str, changes: &[Change], old_lock: Option<&str>) -> (String, &'static str) {
    let parse = |text: Option<&str>| text.and_then(|t| serde_json::from_str::<Value>(t).ok()).unwrap_or(Value::Null);
    let find = |name: &str| changes.iter().find(|c| change_file(c) == name);
    let old = parse(old_lock);
    if let Some(Change::Write { content, .. }) = find("latest.json") {
        let r = parse(Some(content));
        let (run, status) = (r["runId"].as_str().unwrap_or("?"), r["status"].as_str().unwrap_or("?"));
        let lock = find("lock.json").map(|_| describe(env, scope, &changes_without_receipt(changes), old_lock).0);
        let subject = match lock {
            Some(lock) if lock.starts_with("lock ") => format!("{lock}, receipt {run} ({status})"),
            Some(unlock) if unlock.starts_with("unlock ") => {
                let holder = old["holder"].as_str().unwrap_or("?");
                format!("receipt {env}/{scope} {run} ({status}), unlock {holder}")
            }
            _ => format!("receipt {env}/{scope} {run} ({status})"),
        };
        return (subject, "a receipt");
    }
    match find("lock.json") {
        Some(Change::Delete { .. }) => {
            (format!("unlock {env}/{scope} {}", old["holder"].as_str().unwrap_or("?")), "the unlock")
        }
        Some(Change::Write { content, .. }) => {
            let new = parse(Some(content));
            let (holder, epoch) = (new["holder"].as_str().unwrap_or("?"), &new["epoch"]);
            if old["holder"] == new["holder"] && old["epoch"] == new["epoch"] {
                (format!("renew {env}/{scope} {holder}"), "the renewal")
            } else {
                (format!("lock {env}/{scope} {holder} (epoch {epoch})"), "the lock")
            }
        }
        None => (format!("update {env}/{scope}"), "the change"),
    }
}

fn change_file(c: &Change) -> &str {
    match c {
        Change::Write { file, .. } | Change::Delete { file } => file,
    }
}

/// `changes` without the receipt files (what is left of a batch for [`describe`]'s lock part).
fn changes_without_receipt(changes: &[Change]) -> Vec<Change> {
    changes.iter().filter(|c| change_file(c) == "lock.json").cloned().collect()
}

/// Parses the output of `git cat-file --batch` for `count` requests: one entry per request, the blob's
/// text (invalid UTF-8 replaced by U+FFFD, which the core later reports as a corrupt file) or `None` for
/// a missing object or one that is not a blob. `output` is the bytes as Latin-1 text (one character per
/// byte, U+0000-U+00FF), so that JSON can carry any bytes and sizes stay byte counts. Output that ends
/// early is `INTERNAL`.
pub fn parse_batch(output: &str, count: usize) -> Result<Vec<Option<String>>, CoreError> {
    let Some(bytes) = output.chars().map(|c| u8::try_from(u32::from(c)).ok()).collect::<Option<Vec<u8>>>() else {
        return Err(CoreError::internal("cat-file output must be passed as Latin-1 text (one character per byte)"));
    };
    let mut at = 0;
    let mut objects = Vec::with_capacity(count);
    for _ in 0..count {
        let Some(end) = bytes[at..].iter().position(|&b| b == b'\n').map(|i| at + i) else {
            return Err(CoreError::internal("git cat-file answered less than asked"));
        };
        let header = String::from_utf8_lossy(&bytes[at..end]).into_owned();
        at = end + 1;
        let mut parts = header.split(' ');
        let (oid, kind, size) = (parts.next(), parts.next(), parts.next().and_then(|s| s.parse::<usize>().ok()));
        let is_oid = oid.is_some_and(|o| (40..=64).contains(&o.len()) && o.chars().all(|c| c.is_ascii_hexdigit()));
        match (is_oid, kind, size) {
            (true, Some(kind), Some(size)) if parts.next().is_none() && at + size <= bytes.len() => {
                objects.push((kind == "blob").then(|| String::from_utf8_lossy(&bytes[at..at + size]).into_owned()));
                at += size + 1;
            }
            _ => objects.push(None), // `<spec> missing` (or ambiguous)
        }
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ch(v: Value) -> Change {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_root_commit_then_a_change() {
        let changes = [ch(json!({"op": "write", "file": "lock.json", "content": "{\"holder\":\"h\",\"epoch\":1}"}))];
        let c = commit("preview", "pr-1", "preview/pr-1", None, &changes, None, &[]).unwrap();
        assert_eq!(
            (Some(c.message.as_str()), Some(c.what.as_str())),
            (Some("lock preview/pr-1 h (epoch 1)"), Some("the lock"))
        );
        let s = c.stream.as_str();
        assert!(s.starts_with("reset refs/baton/new\ncommit refs/baton/new\nmark :1\n"), "{s}");
        assert!(s.contains("data 31\nStart receipts for preview/pr-1\n") && s.contains("from :1\n"), "{s}");
        assert!(s.contains("M 100644 inline preview/pr-1/lock.json\ndata 24\n") && s.ends_with("get-mark :2\n"), "{s}");
        let del = [ch(json!({"op": "delete", "file": "lock.json"}))];
        let c = commit("preview", "pr-1", "preview/pr-1", Some("ab12"), &del, Some("{\"holder\":\"h\"}"), &[]).unwrap();
        assert_eq!(c.message, "unlock preview/pr-1 h");
        // A batch says both what it locked or unlocked and which receipt it wrote.
        let receipt = |status: &str| {
            ch(
                json!({"op": "write", "file": "latest.json", "content": format!("{{\"runId\":\"r\",\"status\":\"{status}\"}}")}),
            )
        };
        let opened = [changes[0].clone(), receipt("failed")];
        let c = commit("preview", "pr-1", "preview/pr-1", Some("ab12"), &opened, None, &[]).unwrap();
        assert_eq!(c.message, "lock preview/pr-1 h (epoch 1), receipt r (failed)");
        let closed = [receipt("complete"), del[0].clone()];
        let c =
            commit("preview", "pr-1", "preview/pr-1", Some("ab12"), &closed, Some("{\"holder\":\"h\"}"), &[]).unwrap();
        assert_eq!(
            (Some(c.message.as_str()), Some(c.what.as_str())),
            (Some("receipt preview/pr-1 r (complete), unlock h"), Some("a receipt"))
        );
        let s = c.stream.as_str();
        assert!(s.contains("from ab12\n") && s.contains("D preview/pr-1/lock.json\n") && !s.contains("mark :1"), "{s}");
        // Byte lengths, not characters.
        let c = commit(
            "e",
            "s",
            "e/s",
            Some("ab"),
            &[ch(json!({"op": "write", "file": "x.txt", "content": "é"}))],
            None,
            &[],
        )
        .unwrap();
        assert!(c.stream.contains("inline e/s/x.txt\ndata 2\né\n"));
        for bad in ["../x", ".hidden", "a/b", ""] {
            let e = commit("e", "s", "e/s", None, &[ch(json!({"op": "write", "file": bad, "content": ""}))], None, &[]);
            assert!(e.is_err(), "{bad}");
        }
    }

    #[test]
    fn cat_file_output_is_parsed_by_bytes() {
        let oid = "a".repeat(40);
        let mut out = format!("{oid} blob 2\n").into_bytes();
        out.extend_from_slice(&[0xc3, 0xa9, b'\n']);
        out.extend_from_slice(b"HEAD:missing missing\n");
        out.extend_from_slice(format!("{oid} tree 3\nabc\n").as_bytes());
        out.extend_from_slice(format!("{oid} blob 1\n").as_bytes());
        out.extend_from_slice(&[0xff, b'\n']);
        let latin1: String = out.iter().map(|&b| char::from(b)).collect();
        let got = parse_batch(&latin1, 4).unwrap();
        assert_eq!(got, vec![Some("é".to_owned()), None, None, Some("\u{fffd}".to_owned())]);
        assert!(parse_batch(&latin1, 5).is_err(), "less than asked");
        assert!(parse_batch("é\u{100}", 1).is_err(), "not Latin-1");
    }
}
