//! The pure parts of the etcd store (`etcd:<endpoint>[,<endpoint>...]`), the same for the native host
//! (`etcd-client`) and Node (`etcd3`): the spec and its credentials, where a cell's files live, the one
//! transaction that commits a change set, what a listing shows, and what a failed request means.
//!
//! Layout: the file `f` of the cell `env/scope` is the key `<prefix><env dir>/<scope dir>/f`, the names
//! spelled as the dir store spells its directories ([`crate::names::path_segment`], injective), under the
//! prefix `BATON_ETCD_PREFIX` (default `/baton/`). The values are the files' bytes, so `etcdctl get
//! --prefix /baton/preview/pr-1/` shows the same `lock.json` a dir store holds.
//!
//! Compare-and-swap: a load reads the cell's state files (`lock.json`, `epoch.json`, `latest.json`) and
//! their `mod_revision`s in one read-only transaction; the commit is ONE transaction that compares the
//! `mod_revision` of every state file with what the load saw (`0` for a file that was absent) and, only
//! if all are unchanged, writes and deletes the change set's keys. A refused compare is a conflict: the
//! host loads again and asks the core again, paced by [`retry`]. A state file written, created or
//! deleted by anyone in between moves its `mod_revision`, so no decision is ever committed on a cell
//! that changed. Files that are not state files (receipts, fenced data) are written only by decisions on
//! the lock, which that compare covers, as in the dir and git stores.

use crate::cell::{Change, STATE_FILES};
use crate::error::{CoreError, ErrorCode};
use crate::names::path_segment;
use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

/// The key prefix when `BATON_ETCD_PREFIX` is not set.
pub const DEFAULT_PREFIX: &str = "/baton/";

/// How long one request to one endpoint may take before the host tries the next endpoint (within the
/// operation's budget): a member that stopped answering (SIGSTOP, a partition) costs at most this.
pub const ATTEMPT_MS: u64 = 2_000;

/// Client TLS files, by path (`BATON_ETCD_CA`, `BATON_ETCD_CERT`, `BATON_ETCD_KEY`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Tls {
    /// The CA bundle that signed the servers' certificates.
    pub ca: Option<String>,
    /// The client certificate (with `key`).
    pub cert: Option<String>,
    /// The client certificate's private key (with `cert`).
    pub key: Option<String>,
}

/// What the host gathered for an etcd store besides the spec: the variables as given.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EtcdVars {
    /// `BATON_ETCD_PREFIX`.
    #[serde(default)]
    pub prefix: Option<String>,
    /// `BATON_ETCD_USER`.
    #[serde(default)]
    pub user: Option<String>,
    /// `BATON_ETCD_PASSWORD`.
    #[serde(default)]
    pub password: Option<String>,
    /// `BATON_ETCD_CA`.
    #[serde(default)]
    pub ca: Option<String>,
    /// `BATON_ETCD_CERT`.
    #[serde(default)]
    pub cert: Option<String>,
    /// `BATON_ETCD_KEY`.
    #[serde(default)]
    pub key: Option<String>,
}

fn nonblank(v: Option<&str>) -> Option<String> {
    v.map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
}

/// Decodes `%XX` escapes (credentials in a URL); anything else is kept as it is.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One endpoint: `http(s)://[user[:password]@]host[:port]` or `host[:port]` (then `http`, or `https`
/// when a CA is given); the port defaults to 2379. Answers the endpoint without credentials and the
/// credentials it carried.
fn endpoint(text: &str, tls: bool) -> Result<(String, Option<(String, String)>), String> {
    let (scheme, rest) = match text.split_once("://") {
        Some((s, r)) if s.eq_ignore_ascii_case("http") || s.eq_ignore_ascii_case("https") => {
            (s.to_ascii_lowercase(), r)
        }
        Some((s, _)) => return Err(format!("the scheme `{s}` is not http or https")),
        None => ((if tls { "https" } else { "http" }).to_owned(), text),
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains('/') || rest.contains('?') || rest.contains('#') {
        return Err("an endpoint has no path: give scheme, host and port only".to_owned());
    }
    let (auth, hostport) = match rest.rsplit_once('@') {
        Some((a, h)) => {
            let (u, p) = a.split_once(':').unwrap_or((a, ""));
            (Some((percent_decode(u), percent_decode(p))), h)
        }
        None => (None, rest),
    };
    let (host, port) = match hostport.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || hostport.starts_with('[') => {
            if hostport.starts_with('[') && !h.ends_with(']') { (hostport, None) } else { (h, Some(p)) }
        }
        _ => (hostport, None),
    };
    let host_ok = !host.is_empty()
        && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'));
    if !host_ok {
        return Err("the host is missing or not a host name or address".to_owned());
    }
    let port = match port {
        None => 2379,
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(|| format!("the port `{p}` is not a port"))?,
    };
    Ok((format!("{scheme}://{host}:{port}"), auth))
}

/// A user name and password for etcd.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EtcdAuth {
    /// The user.
    pub user: String,
    /// The password.
    pub password: String,
}

/// An etcd store (`etcd:<endpoints>`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdSpec {
    /// The endpoints, without credentials, each once, in the order given.
    pub endpoints: Vec<String>,
    /// The key prefix, ending in `/`.
    pub prefix: String,
    /// The budget of one store operation, retries included.
    pub budget_ms: u64,
    /// How long one request to one endpoint may take before the next endpoint is tried.
    pub attempt_ms: u64,
    /// The credentials (of the URL, else `BATON_ETCD_USER` / `BATON_ETCD_PASSWORD`).
    pub auth: Option<EtcdAuth>,
    /// The TLS files, when any is given.
    pub tls: Option<Tls>,
    /// What a child process opens the same store with (credentials of the URL included).
    pub export_spec: String,
}

/// The etcd store named by `etcd:<list>` (`list` without the `etcd:`), with `vars` and the operation
/// budget, and its label (`etcd:<endpoints>`, naming the store without credentials; `export_spec` is what
/// a child process opens the same store with, credentials of the URL included, as for a git remote).
/// Credentials in the URL beat `BATON_ETCD_USER`/`BATON_ETCD_PASSWORD`. `USAGE` (naming the bad part,
/// never a password) for anything that does not parse. `store-spec` answers it as `{kind: "etcd", ...}`.
pub fn spec(list: &str, vars: &EtcdVars, budget_ms: u64) -> Result<(EtcdSpec, String), CoreError> {
    let usage = |why: String| {
        CoreError::usage(format!(
            "The etcd store `etcd:{}` cannot be used: {why}. Name it like etcd:http://127.0.0.1:2379,http://127.0.0.1:22379 (BATON_ETCD_USER / BATON_ETCD_PASSWORD for a user, BATON_ETCD_CA / BATON_ETCD_CERT / BATON_ETCD_KEY for TLS, BATON_ETCD_PREFIX for the key prefix).",
            crate::gitstore::redact(list)
        ))
        .with("store", format!("etcd:{}", crate::gitstore::redact(list)))
    };
    let ca = nonblank(vars.ca.as_deref());
    let (cert, key) = (nonblank(vars.cert.as_deref()), nonblank(vars.key.as_deref()));
    if cert.is_some() != key.is_some() {
        return Err(usage("BATON_ETCD_CERT and BATON_ETCD_KEY go together (a client certificate and its key)".into()));
    }
    let tls_given = ca.is_some() || cert.is_some();
    let mut endpoints = Vec::new();
    let mut url_auth: Option<(String, String)> = None;
    for part in list.split(',').map(str::trim) {
        if part.is_empty() {
            return Err(usage("an endpoint is empty".into()));
        }
        let (url, auth) =
            endpoint(part, tls_given).map_err(|why| usage(format!("{} ({why})", crate::gitstore::redact(part))))?;
        if let Some(a) = auth {
            if url_auth.as_ref().is_some_and(|b| *b != a) {
                return Err(usage("the endpoints name different users".into()));
            }
            url_auth = Some(a);
        }
        if !endpoints.contains(&url) {
            endpoints.push(url);
        }
    }
    let prefix = nonblank(vars.prefix.as_deref()).unwrap_or_else(|| DEFAULT_PREFIX.to_owned());
    if !prefix.chars().all(|c| c.is_ascii_graphic()) {
        return Err(usage(format!("BATON_ETCD_PREFIX `{prefix}` must be printable ASCII without spaces")));
    }
    let prefix = if prefix.ends_with('/') { prefix } else { format!("{prefix}/") };
    let auth =
        url_auth.or_else(|| nonblank(vars.user.as_deref()).map(|u| (u, vars.password.clone().unwrap_or_default())));
    if auth.as_ref().is_some_and(|(u, _)| u.is_empty()) {
        return Err(usage("the user name is empty".into()));
    }
    let tls = tls_given.then_some(Tls { ca, cert, key });
    let label = format!("etcd:{}", endpoints.join(","));
    let spec = EtcdSpec {
        endpoints,
        prefix,
        budget_ms,
        attempt_ms: ATTEMPT_MS.min(budget_ms),
        auth: auth.map(|(user, password)| EtcdAuth { user, password }),
        tls,
        export_spec: format!("etcd:{list}"),
    };
    Ok((spec, label))
}

/// One state file of a cell and its key.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct StateKey {
    /// The file (`lock.json`, ...).
    pub file: String,
    /// Its key.
    pub key: String,
}

/// Where an environment and one of its cells live (`etcd-keys`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CellKeys {
    /// The environment's key range: what a list reads.
    pub env: String,
    /// The cell's key range: every key of the cell starts with it. `None` without a scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    /// The state files' keys in the core's `cell-files` order. `None` without a scope.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keys: Option<Vec<StateKey>>,
}

/// `etcd-keys`: where the cell `env/scope` lives under `prefix`: `{env, cell, keys: [{file, key}]}`,
/// `env` the range of the environment (what `list` reads), `cell` the range of the cell, `keys` the
/// state files' keys in the core's `cell-files` order. Without `scope`, only `env`. `USAGE` for a name
/// that is not valid.
pub fn keys(prefix: &str, env: &str, scope: Option<&str>) -> Result<CellKeys, CoreError> {
    crate::scope::validate_name("env", env)?;
    let env_range = format!("{prefix}{}/", path_segment(env));
    let Some(scope) = scope else {
        return Ok(CellKeys { env: env_range, cell: None, keys: None });
    };
    crate::scope::validate_name("scope", scope)?;
    let cell = format!("{env_range}{}/", path_segment(scope));
    let keys = STATE_FILES.iter().map(|f| StateKey { file: (*f).to_owned(), key: format!("{cell}{f}") }).collect();
    Ok(CellKeys { env: env_range, cell: Some(cell), keys: Some(keys) })
}

/// A key whose `mod_revision` must still be `mod_revision` (`0`: the key must not exist).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct KeyRevision {
    /// The key.
    pub key: String,
    /// Its `mod_revision` as loaded.
    pub mod_revision: i64,
}

/// A key and the value to put there.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value.
    pub value: String,
}

/// One etcd transaction (`etcd-txn`): when every compare holds, the puts and deletes; else nothing.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Transaction {
    /// One per state file of the cell.
    pub compare: Vec<KeyRevision>,
    /// The keys written.
    pub put: Vec<KeyValue>,
    /// The keys deleted.
    pub delete: Vec<String>,
}

/// The transaction of a commit: compare every state file's `mod_revision` with `revisions` (as loaded;
/// a file missing there was absent: `0`), then put or delete the keys the `changes` name. A file named
/// twice is written once, as its last change leaves it (etcd refuses a key twice in one transaction).
/// `cell` is the cell's key range (`etcd-keys`). The contents move into the puts.
pub fn txn(cell: &str, revisions: &BTreeMap<String, i64>, changes: Vec<Change>) -> Result<Transaction, CoreError> {
    let compare = STATE_FILES
        .iter()
        .map(|f| KeyRevision { key: format!("{cell}{f}"), mod_revision: revisions.get(*f).copied().unwrap_or(0) })
        .collect();
    // The last change of each file, in the order files were first named.
    let mut order: Vec<String> = Vec::new();
    let mut last: BTreeMap<String, Option<String>> = BTreeMap::new();
    for change in changes {
        let (file, content) = match change {
            Change::Write { file, content } => (file, Some(content)),
            Change::Delete { file } => (file, None),
        };
        if file.is_empty() || file.contains('/') {
            return Err(CoreError::internal(format!("a change names the file `{file}`, which is not a cell file")));
        }
        if !last.contains_key(&file) {
            order.push(file.clone());
        }
        last.insert(file, content);
    }
    let (mut put, mut delete) = (Vec::new(), Vec::new());
    for file in order {
        let key = format!("{cell}{file}");
        match last.remove(&file).flatten() {
            Some(value) => put.push(KeyValue { key, value }),
            None => delete.push(key),
        }
    }
    Ok(Transaction { compare, put, delete })
}

/// One key of a range read.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kv {
    /// The key.
    pub key: String,
    /// Its value (lossy UTF-8), or null.
    #[serde(default)]
    pub value: Option<String>,
}

/// One cell of a listing.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ListedCell {
    /// The scope.
    pub scope: String,
    /// Its `latest.json`, or null.
    pub text: Option<String>,
}

/// `etcd-list`'s answer.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Listing {
    /// Sorted by scope.
    pub cells: Vec<ListedCell>,
}

/// `etcd-list`: the cells of `env` in the range read of `env_range` (`etcd-keys`): every scope with at
/// least one key there, spelled as a transaction on it spells it (see [`super::listing`]), never
/// `_locks`, sorted, each with its `latest.json` text or null.
pub fn list(env: &str, env_range: &str, kvs: &[Kv]) -> Result<Listing, CoreError> {
    let mut entries: BTreeMap<String, Option<String>> = BTreeMap::new();
    for kv in kvs {
        let Some((seg, file)) = kv.key.strip_prefix(env_range).and_then(|rest| rest.split_once('/')) else { continue };
        let text = entries.entry(seg.to_owned()).or_default();
        if file == crate::receipt::LATEST_FILE {
            *text = kv.value.clone();
        }
    }
    let names: Vec<String> = entries.keys().cloned().collect();
    let (_, cells) = super::listing::list_cells(env, super::listing::Spelling::Dir, &names)?;
    let cells = cells
        .into_iter()
        .map(|c| ListedCell { text: entries.get_mut(&c.name).and_then(Option::take), scope: c.scope })
        .collect();
    Ok(Listing { cells })
}

/// Try again (`etcd-retry`): after `delay_ms`, on the next endpoint when `next`.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct RetryDecision {
    /// Always true: an answer that ends the operation is the error instead.
    pub retry: bool,
    /// How long to wait first.
    pub delay_ms: u64,
    /// Move to the next endpoint.
    pub next: bool,
}

/// What one failed attempt was, as the host saw it.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum Outcome {
    /// The commit's compare was refused: another writer changed the cell.
    Conflict,
    /// The request failed (gRPC status `code` when there is one) or the endpoint did not answer within
    /// the attempt's time.
    Failed,
    /// The operation's deadline passed: nothing more may be tried.
    Timeout,
}

/// The failure classes of gRPC status codes (and messages, for errors that carry no code).
fn class(code: Option<u32>, detail: &str) -> ErrorCode {
    let d = detail.to_ascii_lowercase();
    let permission = [
        "authentication failed",
        "permission denied",
        "invalid auth token",
        "user name is empty",
        "certificate",
        "tls handshake",
        "invalid peer certificate",
        "unknown ca",
    ];
    // etcd answers a missing user with INVALID_ARGUMENT: the words decide before the code.
    match code {
        _ if permission.iter().any(|p| d.contains(p)) => ErrorCode::StorePermission,
        Some(7 | 16) => ErrorCode::StorePermission,
        Some(3 | 9 | 11 | 12) => ErrorCode::StoreRejected,
        _ => ErrorCode::StoreContended,
    }
}

/// The retry decision after a failed attempt of one etcd operation on `what` (`the cell preview/pr-1`,
/// `the list of preview`): `{retry, delayMs, next}` (`next`: move to the next endpoint), or the error
/// that ends the operation, naming `endpoint` (the one that failed) and every endpoint of the store.
///
/// A conflict is retried (full-jitter backoff as the git store's) while the budget lasts, then
/// `STORE_CONTENDED`. A failure is `STORE_PERMISSION` at once when the server refused the credentials
/// (gRPC `UNAUTHENTICATED`/`PERMISSION_DENIED`, a TLS failure), `STORE_REJECTED` at once when it refused
/// the request itself (`INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `OUT_OF_RANGE`, `UNIMPLEMENTED`: too
/// large, compacted), and otherwise (unreachable, no leader, an attempt that timed out) tried again on the
/// next endpoint, at once while endpoints are left untried in this round, then after a backoff, until the
/// budget runs out: `STORE_CONTENDED` naming the endpoints. A timeout ends the operation at once.
#[allow(clippy::too_many_arguments)]
pub fn retry(
    what: &str,
    endpoint: &str,
    endpoints: &[String],
    outcome: Outcome,
    code: Option<u32>,
    detail: &str,
    attempts: u32,
    elapsed_ms: u64,
    budget_ms: u64,
    random: f64,
) -> Result<RetryDecision, CoreError> {
    let all = crate::gitstore::redact(&endpoints.join(","));
    let endpoint = crate::gitstore::redact(endpoint);
    let detail = crate::gitstore::redact(detail.trim()).trim_end_matches('.').to_owned();
    let details = |e: CoreError| {
        e.with("endpoint", endpoint.clone())
            .with("endpoints", all.clone())
            .with("attempts", attempts)
            .with("elapsedMs", elapsed_ms)
            .with("budgetMs", budget_ms)
    };
    let unreachable = |elapsed: u64| {
        details(CoreError::new(
            ErrorCode::StoreContended,
            format!(
                "The etcd store did not answer {what} within {elapsed} ms: {endpoint} failed last ({}), after {attempts} attempts on {all} (budget {budget_ms} ms, BATON_STORE_BUDGET_MS, and a held lease's own deadline). Check that the endpoints are reachable and that the cluster has a leader, then run again.",
                if detail.is_empty() { "no answer" } else { &detail }
            ),
        ))
    };
    if outcome == Outcome::Timeout {
        return Err(unreachable(elapsed_ms).with("timedOut", true));
    }
    if outcome == Outcome::Failed {
        match class(code, &detail) {
            ErrorCode::StorePermission => {
                return Err(details(CoreError::new(
                    ErrorCode::StorePermission,
                    format!(
                        "The etcd store at {endpoint} refused {what}: {detail}. Check the user and password (BATON_ETCD_USER / BATON_ETCD_PASSWORD, or user:password@ in the endpoint), its role's permission on the key prefix (BATON_ETCD_PREFIX), and the TLS files (BATON_ETCD_CA / BATON_ETCD_CERT / BATON_ETCD_KEY)."
                    ),
                )));
            }
            ErrorCode::StoreRejected => {
                return Err(details(CoreError::new(
                    ErrorCode::StoreRejected,
                    format!("The etcd store at {endpoint} rejected {what}: {detail}. Nothing was changed."),
                )));
            }
            _ => {}
        }
    }
    let n = u32::try_from(endpoints.len().max(1)).unwrap_or(u32::MAX);
    let random = if random.is_finite() { random.clamp(0.0, 1.0) } else { 0.5 };
    // Failures move to the next endpoint; a whole round of them (or a conflict) backs off first.
    let backoff = outcome == Outcome::Conflict || attempts.is_multiple_of(n);
    let rounds = if outcome == Outcome::Conflict { attempts } else { attempts / n };
    let cap = (25.0 * f64::from(1u32 << rounds.min(16))).min(1000.0);
    let delay = if backoff { (12.5 + random * cap).round() as u64 } else { 0 };
    if elapsed_ms.saturating_add(delay) < budget_ms {
        return Ok(RetryDecision { retry: true, delay_ms: delay, next: outcome == Outcome::Failed });
    }
    if outcome == Outcome::Conflict {
        return Err(details(CoreError::new(
            ErrorCode::StoreContended,
            format!(
                "{what} changed under {attempts} attempts to commit within {elapsed_ms} ms at {all} (budget {budget_ms} ms, BATON_STORE_BUDGET_MS): other writers keep winning. Try again later, or give the store a larger budget."
            ),
        )));
    }
    Err(unreachable(elapsed_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn vars() -> EtcdVars {
        EtcdVars::default()
    }

    /// The spec as `store-spec` answers it.
    fn spec(list: &str, vars: &EtcdVars, budget_ms: u64) -> Result<Value, CoreError> {
        let r = crate::stores::spec::StoreSpecRequest {
            spec: Some(format!("etcd:{list}")),
            budget_ms: Some(budget_ms.to_string()),
            etcd: Some(vars.clone()),
            ..Default::default()
        };
        crate::stores::spec::store_spec(&r).map(|s| serde_json::to_value(s).unwrap_or_default())
    }

    #[test]
    fn specs_name_endpoints_and_keep_credentials_out_of_the_label() {
        let s = spec("http://127.0.0.1:2379, 127.0.0.1:22379 ,http://127.0.0.1:2379", &vars(), 60_000).unwrap();
        assert_eq!(s["endpoints"], json!(["http://127.0.0.1:2379", "http://127.0.0.1:22379"]));
        assert_eq!((s["prefix"].as_str(), s["auth"].is_null(), s["tls"].is_null()), (Some("/baton/"), true, true));
        assert_eq!(s["label"], "etcd:http://127.0.0.1:2379,http://127.0.0.1:22379");
        let s = spec("https://ci:s%40cret@etcd.example:2379", &vars(), 60_000).unwrap();
        assert_eq!(s["auth"], json!({ "user": "ci", "password": "s@cret" }));
        assert_eq!(s["label"], "etcd:https://etcd.example:2379");
        assert!(!s["label"].to_string().contains("cret"));
        let env =
            EtcdVars { user: Some("env".into()), password: Some("pw".into()), prefix: Some("/x".into()), ..vars() };
        let s = spec("etcd.example", &env, 5_000).unwrap();
        assert_eq!(
            (s["auth"].clone(), s["prefix"].clone(), s["endpoints"].clone(), s["attemptMs"].clone()),
            (
                json!({ "user": "env", "password": "pw" }),
                json!("/x/"),
                json!(["http://etcd.example:2379"]),
                json!(2000)
            )
        );
        let tls = EtcdVars { ca: Some("/ca.pem".into()), ..vars() };
        assert_eq!(spec("e:1", &tls, 10).unwrap()["endpoints"], json!(["https://e:1"]));
        for bad in ["", "http://a:1,", "ftp://a", "http://a:1/path", "http://a:0", "http://a:99999", "http:// :1"] {
            let e = spec(bad, &vars(), 1).unwrap_err();
            assert_eq!(e.code, ErrorCode::Usage, "{bad}");
        }
        let e = spec("http://u:hunter2@a:1/x", &vars(), 1).unwrap_err();
        assert!(!e.message.contains("hunter2"), "{}", e.message);
        let half = EtcdVars { cert: Some("/c".into()), ..vars() };
        assert_eq!(spec("a", &half, 1).unwrap_err().code, ErrorCode::Usage);
    }

    #[test]
    fn keys_spell_names_as_the_dir_store() {
        let k = serde_json::to_value(keys("/baton/", "preview", Some("x.lock")).unwrap()).unwrap();
        assert_eq!((k["env"].as_str(), k["cell"].as_str()), (Some("/baton/preview/"), Some("/baton/preview/x.lock/")));
        assert_eq!(k["keys"][0], json!({ "file": "lock.json", "key": "/baton/preview/x.lock/lock.json" }));
        assert_eq!(serde_json::to_value(keys("/b/", "..", None).unwrap()).unwrap(), json!({ "env": "/b/=2e2e/" }));
        assert_eq!(keys("/b/", "a/b", Some("x")).unwrap_err().code, ErrorCode::Usage);
    }

    #[test]
    fn a_commit_compares_every_state_file_and_names_each_key_once() {
        let revs = BTreeMap::from([("lock.json".to_owned(), 7)]);
        let changes = vec![
            Change::Write { file: "lock.json".into(), content: "a".into() },
            Change::Write { file: "x.json".into(), content: "1".into() },
            Change::Delete { file: "lock.json".into() },
            Change::Write { file: "x.json".into(), content: "2".into() },
        ];
        let t = serde_json::to_value(txn("/b/e/s/", &revs, changes).unwrap()).unwrap();
        assert_eq!(
            t["compare"],
            json!([
                { "key": "/b/e/s/lock.json", "modRevision": 7 },
                { "key": "/b/e/s/epoch.json", "modRevision": 0 },
                { "key": "/b/e/s/latest.json", "modRevision": 0 },
                { "key": "/b/e/s/claim.json", "modRevision": 0 }
            ])
        );
        assert_eq!(t["put"], json!([{ "key": "/b/e/s/x.json", "value": "2" }]));
        assert_eq!(t["delete"], json!(["/b/e/s/lock.json"]));
        let bad = vec![Change::Delete { file: "../x".into() }];
        assert_eq!(txn("/b/e/s/", &revs, bad).unwrap_err().code, ErrorCode::Internal);
    }

    #[test]
    fn a_list_shows_each_cell_once_with_its_receipt() {
        let kv = |k: &str, v: &str| Kv { key: k.into(), value: Some(v.into()) };
        let kvs = [
            kv("/b/preview/pr-2/lock.json", "l"),
            kv("/b/preview/pr-1/latest.json", "r1"),
            kv("/b/preview/pr-1/run.json", "r1"),
            kv("/b/preview/_locks/lock.json", "x"),
            kv("/b/preview/=782e6c6f636b/latest.json", "second spelling"),
            kv("/b/preview/stray", "no file"),
        ];
        let l = serde_json::to_value(list("preview", "/b/preview/", &kvs).unwrap()).unwrap();
        assert_eq!(l["cells"], json!([{ "scope": "pr-1", "text": "r1" }, { "scope": "pr-2", "text": null }]));
    }

    #[test]
    fn failures_move_on_conflicts_back_off_and_credentials_stop_at_once() {
        let eps = vec!["http://a:1".to_owned(), "http://b:1".to_owned()];
        let r = retry("the cell p/s", "http://a:1", &eps, Outcome::Failed, Some(14), "unavailable", 1, 10, 1000, 0.5);
        assert_eq!(serde_json::to_value(r.unwrap()).unwrap(), json!({ "retry": true, "delayMs": 0, "next": true }));
        let r = retry("the cell p/s", "http://b:1", &eps, Outcome::Failed, None, "refused", 2, 10, 1000, 0.0).unwrap();
        assert_eq!((r.delay_ms, r.next), (13, true));
        let r = retry("the cell p/s", "http://a:1", &eps, Outcome::Conflict, None, "", 1, 10, 1000, 1.0).unwrap();
        assert_eq!((r.delay_ms, r.next), (63, false));
        let e =
            retry("the cell p/s", "http://a:1", &eps, Outcome::Failed, Some(14), "x", 4, 990, 1000, 0.5).unwrap_err();
        assert_eq!(e.code, ErrorCode::StoreContended);
        assert!(e.message.contains("http://a:1") && e.message.contains("did not answer"), "{}", e.message);
        let e = retry(
            "w",
            "http://u:pw@a:1",
            &eps,
            Outcome::Failed,
            Some(16),
            "etcdserver: authentication failed, invalid user ID or password",
            1,
            0,
            1000,
            0.5,
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::StorePermission);
        assert!(!e.message.contains("pw@"), "{}", e.message);
        let e = retry(
            "w",
            "http://a:1",
            &eps,
            Outcome::Failed,
            Some(3),
            "etcdserver: request is too large",
            1,
            0,
            1000,
            0.5,
        );
        assert_eq!(e.unwrap_err().code, ErrorCode::StoreRejected);
        let e = retry("w", "http://a:1", &eps, Outcome::Timeout, None, "", 1, 1000, 1000, 0.5).unwrap_err();
        assert_eq!((e.code, e.details.get("timedOut").cloned()), (ErrorCode::StoreContended, Some(json!(true))));
        let e = retry("w", "http://a:1", &eps, Outcome::Conflict, None, "", 9, 999, 1000, 0.5).unwrap_err();
        assert!(e.message.contains("other writers"), "{}", e.message);
    }
}
