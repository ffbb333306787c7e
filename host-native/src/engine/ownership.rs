//! The typed `ownership` interface of the core component (`wit/ownership.wit`): the `change` resource, one
//! ownership change (a ledger change with its claim) as a machine the CLI drives (`commands::claim`).

use super::bindings::exports::baton::core::ownership as wo;
use super::bindings::exports::baton::core::types::{Cell, Change};
use super::{CoreComponent, from_wit, wasm_error, wit_error};
use crate::error::HostError;
use wasmtime::component::ResourceAny;

/// An ownership change machine living inside the component. Drop it with [`CoreComponent::change_drop`].
#[derive(Debug)]
pub struct ChangeRef(ResourceAny);

impl CoreComponent {
    /// Creates the change; `USAGE` for a bad resource, or a write without the fence.
    pub fn change_create(&mut self, config: &wo::ChangeConfig) -> Result<ChangeRef, HostError> {
        let c = self.core.baton_core_ownership().change();
        c.call_create(&mut self.store, config).map_err(wasm_error)?.map_err(from_wit).map(ChangeRef)
    }

    /// The change's next action.
    pub fn change_poll(&mut self, c: &ChangeRef) -> Result<Option<wo::ChangeAction>, HostError> {
        self.core.baton_core_ownership().change().call_poll_action(&mut self.store, c.0).map_err(wasm_error)
    }

    /// Decides load `id` on the snapshot `cell` at wall-clock `now_ms`: the changes to commit, or the refusal.
    pub fn change_apply(&mut self, c: &ChangeRef, id: u64, cell: &Cell, now_ms: i64) -> Result<Vec<Change>, HostError> {
        let o = self.core.baton_core_ownership();
        o.change().call_apply(&mut self.store, c.0, id, cell, now_ms).map_err(wasm_error)?.map_err(from_wit)
    }

    /// Reports how load `id` ended.
    pub fn change_outcome(&mut self, c: &ChangeRef, id: u64, outcome: Result<(), HostError>) -> Result<(), HostError> {
        let outcome = outcome.map_err(|e| wit_error(&e));
        let o = self.core.baton_core_ownership();
        o.change()
            .call_handle_outcome(&mut self.store, c.0, id, outcome.as_ref().err().map_or(Ok(()), Err))
            .map_err(wasm_error)?
            .map_err(from_wit)
    }

    /// Reports listing `id`.
    pub fn change_listing(
        &mut self,
        c: &ChangeRef,
        id: u64,
        listing: Result<Vec<wo::ListedScope>, HostError>,
    ) -> Result<(), HostError> {
        let listing = listing.map_err(|e| wit_error(&e));
        let o = self.core.baton_core_ownership();
        o.change()
            .call_handle_listing(&mut self.store, c.0, id, listing.as_deref())
            .map_err(wasm_error)?
            .map_err(from_wit)
    }

    /// Frees the change.
    pub fn change_drop(&mut self, c: ChangeRef) -> Result<(), HostError> {
        c.0.resource_drop(&mut self.store).map_err(wasm_error)
    }
}
