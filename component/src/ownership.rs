//! The `ownership` interface (`wit/ownership.wit`): the `change` resource, a core ownership change
//! machine (`baton_core::claims::ChangeMachine`) behind a `RefCell`. Conversions only ([`convert`]).

use crate::Component;
use crate::convert;
use crate::exports::baton::core::ownership::{self as wo, Guest, GuestChange};
use crate::exports::baton::core::types::{Cell, Change as CellChange, Error};
use baton_core::claims::ChangeMachine;
use std::cell::RefCell;

/// One ownership change in progress.
pub struct Change(RefCell<ChangeMachine>);

impl Guest for Component {
    type Change = Change;
}

impl GuestChange for Change {
    fn create(config: wo::ChangeConfig) -> Result<wo::Change, Error> {
        let config = convert::change_config(config).map_err(convert::error)?;
        let m = ChangeMachine::new(config).map_err(convert::error)?;
        Ok(wo::Change::new(Self(RefCell::new(m))))
    }
    fn poll_action(&self) -> Option<wo::ChangeAction> {
        self.0.borrow_mut().poll_action().map(convert::change_action)
    }
    fn apply(&self, id: u64, cell: Cell, now_ms: i64) -> Result<Vec<CellChange>, Error> {
        let changes = self.0.borrow_mut().apply(id, &convert::cell(cell), now_ms).map_err(convert::error)?;
        Ok(changes.into_iter().map(convert::change).collect())
    }
    fn handle_outcome(&self, id: u64, outcome: Result<(), Error>) -> Result<(), Error> {
        self.0.borrow_mut().handle_outcome(id, outcome.map_err(convert::error_back)).map_err(convert::error)
    }
    fn handle_listing(&self, id: u64, listing: Result<Vec<wo::ListedScope>, Error>) -> Result<(), Error> {
        let listing = listing.map(convert::listed_scopes).map_err(convert::error_back);
        self.0.borrow_mut().handle_listing(id, listing).map_err(convert::error)
    }
    fn is_finished(&self) -> bool {
        self.0.borrow().is_finished()
    }
}
