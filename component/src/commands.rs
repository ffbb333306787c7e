//! The `commands` interface: the commands' small decisions, typed (`wit/commands.wit`). Each export
//! converts its arguments with [`convert`], calls the core's typed function and converts the answer back.

use crate::Component;
use crate::convert;
use crate::exports::baton::core::commands::{self as wc, Guest};
use crate::exports::baton::core::types::{Cell, Error};
use baton_core::command_line::{self, CommandLineRequest};
use baton_core::typed::commands as tc;
use baton_core::{ownership, stores};

impl Guest for Component {
    fn store_spec(request: wc::StoreRequest) -> Result<wc::StoreChoice, Error> {
        stores::spec::store_spec(&convert::store_request(request)).map(convert::store_choice).map_err(convert::error)
    }
    fn command_line(
        command: String,
        argv: Vec<String>,
        vars: Vec<wc::Variable>,
    ) -> Result<wc::CommandLineAnswer, Error> {
        let request = CommandLineRequest { command, argv, vars: convert::variables(vars) };
        command_line::answer(&request).map(convert::command_line_answer).map_err(convert::error)
    }
    fn succession(scope: String, branch: Option<String>, pr: Option<u64>, ttl_ms: Option<u64>) -> wc::Inheritance {
        convert::inheritance(tc::succession(&tc::SuccessionRequest { scope, branch, pr, ttl_ms }))
    }
    fn parent_cell(identity: String, secrets: Vec<String>) -> Result<wc::ParentObjectCell, Error> {
        let request = tc::ParentCellRequest { identity, secrets };
        tc::parent_cell(&request).map(convert::parent_object_cell).map_err(convert::error)
    }
    fn approval(env: String, approved_by: Option<String>) -> Result<wc::ApprovalVerdict, Error> {
        ownership::approve(&env, approved_by.as_deref()).map(convert::approval_verdict).map_err(convert::error)
    }
    fn scope_status(
        cell: Cell,
        now_ms: i64,
        others: Vec<wc::OtherScope>,
        predecessor: Option<String>,
    ) -> Result<wc::ScopeReport, Error> {
        let others = convert::other_scopes(others);
        ownership::status(&convert::cell(cell), now_ms, &others, predecessor.as_deref())
            .map(convert::scope_report)
            .map_err(convert::error)
    }
    fn receipt_parse(text: String, place: String) -> Result<String, Error> {
        tc::receipt_parse(&text, &place).map_err(convert::error)
    }
}
