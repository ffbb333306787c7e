// Conversions between the core's etcd types (core/src/stores/etcd.rs) and the generated WIT types of the
// `etcd` interface, both ways. Nothing is decided here.
//
// `include!`d where the generated types are in scope as `e` (interface `etcd`): by the component
// (`etcd.rs`, wit-bindgen's types) and by the CLI's conformance test (`host-native/tests/scenarios.rs`,
// wasmtime's `bindgen!` types), as `wit_convert.rs` is.

use baton_core::stores::etcd as core_etcd;

pub fn cell_keys(k: core_etcd::CellKeys) -> e::CellKeys {
    e::CellKeys {
        env: k.env,
        cell: k.cell,
        keys: k.keys.unwrap_or_default().into_iter().map(|s| e::StateKey { file: s.file, key: s.key }).collect(),
    }
}

pub fn cell_keys_back(k: e::CellKeys) -> core_etcd::CellKeys {
    let keys = k.cell.is_some().then(|| {
        k.keys.into_iter().map(|s| core_etcd::StateKey { file: s.file, key: s.key }).collect()
    });
    core_etcd::CellKeys { env: k.env, cell: k.cell, keys }
}

pub fn transaction(t: core_etcd::Transaction) -> e::Transaction {
    e::Transaction {
        compare: t.compare.into_iter().map(|c| e::KeyRevision { key: c.key, mod_revision: c.mod_revision }).collect(),
        put: t.put.into_iter().map(|p| e::KeyValue { key: p.key, value: p.value }).collect(),
        delete: t.delete,
    }
}

pub fn transaction_back(t: e::Transaction) -> core_etcd::Transaction {
    core_etcd::Transaction {
        compare: t
            .compare
            .into_iter()
            .map(|c| core_etcd::KeyRevision { key: c.key, mod_revision: c.mod_revision })
            .collect(),
        put: t.put.into_iter().map(|p| core_etcd::KeyValue { key: p.key, value: p.value }).collect(),
        delete: t.delete,
    }
}

pub fn kv_back(kv: e::Kv) -> core_etcd::Kv {
    core_etcd::Kv { key: kv.key, value: kv.value }
}

pub fn kv(kv: core_etcd::Kv) -> e::Kv {
    e::Kv { key: kv.key, value: kv.value }
}

pub fn listing(l: core_etcd::Listing) -> Vec<e::ListedCell> {
    l.cells.into_iter().map(|c| e::ListedCell { scope: c.scope, text: c.text }).collect()
}

pub fn listing_back(cells: Vec<e::ListedCell>) -> core_etcd::Listing {
    core_etcd::Listing {
        cells: cells.into_iter().map(|c| core_etcd::ListedCell { scope: c.scope, text: c.text }).collect(),
    }
}

pub fn outcome(o: core_etcd::Outcome) -> e::Outcome {
    match o {
        core_etcd::Outcome::Conflict => e::Outcome::Conflict,
        core_etcd::Outcome::Failed => e::Outcome::Failed,
        core_etcd::Outcome::Timeout => e::Outcome::Timeout,
    }
}

pub fn outcome_back(o: e::Outcome) -> core_etcd::Outcome {
    match o {
        e::Outcome::Conflict => core_etcd::Outcome::Conflict,
        e::Outcome::Failed => core_etcd::Outcome::Failed,
        e::Outcome::Timeout => core_etcd::Outcome::Timeout,
    }
}

pub fn retry_decision(d: core_etcd::RetryDecision) -> e::RetryDecision {
    e::RetryDecision { delay_ms: d.delay_ms, next: d.next }
}

pub fn retry_decision_back(d: e::RetryDecision) -> core_etcd::RetryDecision {
    core_etcd::RetryDecision { retry: true, delay_ms: d.delay_ms, next: d.next }
}
