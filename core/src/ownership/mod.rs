//! Ownership: what a scope owns, what it inherits from its branch, what belongs to other scopes, and how a
//! run records all of it in fenced receipt writes.
//!
//! Every operation here is a cell transaction like the lock ones: the host loads the cell (with
//! `latest.json`), adds `nowMs`, calls the operation, and commits the returned changes. Operations that
//! write are fenced: they first check that the holder holds the cell's lock at its epoch, in the same
//! transaction, and write nothing otherwise (`LOCK_LOST`).
//!
//! Rules (`reference/sponson-behaviour.md` §4-§9, with the fixes of DESIGN §7):
//! - a `pr-<n>` scope's predecessor is `branch-<head branch>` (only `branch-` scopes are predecessors);
//!   the PR scope inherits the predecessor's entries at the start of every run until a successful run of
//!   the PR hands them over (the predecessor's receipt is rewritten, under the predecessor's lock, without
//!   them and with `supersededBy`);
//! - every entry of every other scope of the environment (intents included) is foreign, except the
//!   predecessor's: relying on a foreign resource unchanged records it as `adopted`, creating or changing it
//!   is `OWNED_BY_OTHER_SCOPE`;
//! - an intent is written before a create and becomes owned when recorded; a successor that finds it claims
//!   it or re-creates; destroy never drops an unresolved intent on a guess (`INTENT_UNRESOLVED`).

mod ops;
mod scopes;
mod status;

pub use ops::*;
pub use scopes::{HANDOVER_TTL_MS, OtherScope, PARENT_ENV, foreign_map, handover_ttl_ms, parent_cell, predecessor_of};
pub use status::{LockState, ScopeStatus, StatusLock, status};
