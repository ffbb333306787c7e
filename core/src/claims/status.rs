//! Conflicts: resources two scopes' ledgers both list as owned (stores written before claims, or by the
//! original tool). Reported for a person to resolve; never given to one of them.

use super::take::lists;
use crate::ownership::OtherScope;
use crate::receipt::{CreatedBy, Receipt, ResourceRef};
use serde::Serialize;

/// A resource the scope lists and other scopes list too.
#[derive(Clone, Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    /// The resource, as this scope lists it.
    pub resource: ResourceRef,
    /// The other scopes that list it as owned or as an intent, in name order.
    pub scopes: Vec<String>,
}

/// The resources `own` (the receipt of scope `scope`) lists as owned or as an intent that another scope
/// also lists, except its predecessor (inherited) and a pull request's inherited copy of what `scope`
/// still lists (a pending handover).
pub fn conflicts(
    scope: &str,
    own: Option<&Receipt>,
    others: &[OtherScope],
    predecessor: Option<&str>,
) -> Vec<Conflict> {
    let Some(own) = own else {
        return Vec::new();
    };
    let mut sorted: Vec<(&str, Receipt)> = others
        .iter()
        .filter(|o| o.scope != scope && Some(o.scope.as_str()) != predecessor)
        .filter_map(|o| o.receipt().map(|r| (o.scope.as_str(), r)))
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    own.ledger
        .iter()
        .filter(|e| e.created_by() != CreatedBy::Adopted)
        .filter_map(|e| {
            let identity = e.identity();
            let scopes: Vec<String> =
                sorted.iter().filter(|(_, r)| lists(r, &identity, Some(scope))).map(|(s, _)| (*s).to_owned()).collect();
            (!scopes.is_empty()).then(|| Conflict { resource: e.to_ref(), scopes })
        })
        .collect()
}
