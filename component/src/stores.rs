//! The `stores` interface: the store building blocks, typed (`wit/stores.wit`). Each export converts its
//! arguments with [`convert`], calls the core's typed function and converts the answer back.

use crate::Component;
use crate::convert;
use crate::exports::baton::core::stores::{self as ws, Guest};
use crate::exports::baton::core::types::{Cell, Error};
use baton_core::typed::stores as st;
use baton_core::{gc, gitclone, gitstore, gitstream, mutex};

impl Guest for Component {
    fn cell_path(env: String, scope: String) -> Result<ws::CellLocation, Error> {
        st::cell_path(&env, &scope).map(convert::cell_location).map_err(convert::error)
    }
    fn scope_names(dirs: Vec<String>) -> Vec<Option<String>> {
        st::scope_names(&dirs).scopes
    }
    fn list_cells(env: String, spelling: ws::Spelling, names: Vec<String>) -> Result<ws::Listing, Error> {
        let request = st::ListCellsRequest { env, spelling: convert::spelling(spelling), names };
        st::list_cells(&request).map(convert::listing).map_err(convert::error)
    }
    fn cell_file(cell: Cell, file: String) -> Option<String> {
        convert::cell(cell).files.remove(&file)
    }
    fn redact(text: String) -> String {
        gitstore::redact(&text)
    }
    fn io_error(errno: Option<String>, what: String, detail: String) -> ws::IoFailure {
        convert::io_failure(st::io_error(&st::IoErrorRequest { errno, what, detail }))
    }
    fn git_env() -> ws::GitEnvironment {
        convert::git_environment(st::git_env())
    }
    fn store_deadline(now_ms: u64, started_ms: u64, budget_ms: u64, deadline_ms: Option<u64>) -> u64 {
        gitstore::remaining(now_ms, started_ms, budget_ms, deadline_ms)
    }
    fn git_clone_name(request: ws::CloneNameRequest) -> String {
        let r = convert::clone_name_request(request);
        gitclone::clone_name(&r.remote, &r.host, r.pid, r.start.as_deref(), &r.random)
    }
    fn git_stale_clones(names: Vec<String>, host: String, processes: Option<Vec<ws::ProcessFact>>) -> ws::StaleClones {
        let processes = convert::processes(processes);
        convert::stale_clones(gitclone::stale(&names, &host, processes.as_ref()))
    }
    fn git_push_outcome(exit_code: i32, stderr: String) -> ws::PushClassified {
        convert::push_classified(st::git_push_outcome(exit_code, &stderr))
    }
    fn git_retry(request: ws::RetryRequest) -> Result<ws::RetryDecision, Error> {
        st::git_retry(&convert::retry_request(request)).map(convert::retry_decision).map_err(convert::error)
    }
    fn git_readme(parent_object: bool, env: Option<String>) -> String {
        st::git_readme(&st::ReadmeRequest { parent_object, env }).to_owned()
    }
    fn git_commit(request: ws::CommitRequest) -> Result<ws::CommitStream, Error> {
        st::git_commit(&convert::commit_request(request)).map(convert::commit_stream).map_err(convert::error)
    }
    fn git_cat_parse(output: String, count: u32) -> Result<Vec<Option<String>>, Error> {
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        gitstream::parse_batch(&output, count).map_err(convert::error)
    }
    fn mutex_content(owner: ws::MutexOwner) -> Result<ws::MutexLine, Error> {
        mutex::content(&convert::mutex_owner(owner)).map(convert::mutex_line).map_err(convert::error)
    }
    fn mutex_verdict(
        content: String,
        host: String,
        proc: bool,
        owner: Option<ws::OwnerFacts>,
    ) -> Result<ws::MutexJudgement, Error> {
        let request = mutex::VerdictRequest { content, host, proc, owner: owner.map(convert::owner_facts) };
        mutex::verdict(&request).map(convert::mutex_judgement).map_err(convert::error)
    }
    fn gc_plan(request: ws::GcRequest) -> Result<ws::GcVerdicts, Error> {
        gc::plan(&convert::gc_request(request)).map(convert::gc_verdicts).map_err(convert::error)
    }
    fn gc_outcome(results: Vec<ws::DestroyResult>) -> ws::GcSummary {
        convert::gc_summary(gc::outcome(&convert::destroy_results(results)))
    }
    fn render(command: Option<String>, outcome: ws::CommandOutcome) -> Result<ws::Rendered, Error> {
        let input = convert::render_input(command, outcome).map_err(convert::error)?;
        Ok(convert::rendered(baton_core::envelope::render(input)))
    }
    fn detect_context(request: ws::ContextRequest) -> Result<ws::Detection, Error> {
        let input = convert::context_request(request).map_err(convert::error)?;
        baton_core::context::detect(&input).map(convert::detection).map_err(convert::error)
    }
}
