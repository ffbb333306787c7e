//! The `etcd` interface: the etcd store's pure parts (core/src/stores/etcd.rs), typed. Conversions only.

use crate::Component;
use crate::convert;
use crate::exports::baton::core::etcd as e;
use crate::exports::baton::core::types::Error;
use baton_core::stores::etcd as core_etcd;

#[allow(dead_code)] // the shared text converts both ways; the component needs one way of some
mod conv {
    use crate::exports::baton::core::etcd as e;
    include!("etcd_convert.rs");
}

impl e::Guest for Component {
    fn keys(r: e::KeysRequest) -> Result<e::CellKeys, Error> {
        core_etcd::keys(&r.prefix, &r.env, r.scope.as_deref()).map(conv::cell_keys).map_err(convert::error)
    }

    fn txn(r: e::TxnRequest) -> Result<e::Transaction, Error> {
        let revisions = r.revisions.into_iter().map(|f| (f.file, f.mod_revision)).collect();
        let changes = r.changes.into_iter().map(convert::change_back).collect();
        core_etcd::txn(&r.cell, &revisions, changes).map(conv::transaction).map_err(convert::error)
    }

    fn list(r: e::ListRequest) -> Result<Vec<e::ListedCell>, Error> {
        let kvs: Vec<core_etcd::Kv> = r.kvs.into_iter().map(conv::kv_back).collect();
        core_etcd::list(&r.env, &r.range, &kvs).map(conv::listing).map_err(convert::error)
    }

    fn retry(r: e::RetryRequest) -> Result<e::RetryDecision, Error> {
        core_etcd::retry(
            &r.what,
            &r.endpoint,
            &r.endpoints,
            conv::outcome_back(r.outcome),
            r.code,
            &r.detail,
            r.attempts,
            r.elapsed_ms,
            r.budget_ms,
            r.random,
        )
        .map(conv::retry_decision)
        .map_err(convert::error)
    }
}
