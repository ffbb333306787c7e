//! `baton write FILE`: a fenced write of one data file of the cell, content from stdin.

use super::lock::{data, required_fence, target};
use crate::cli::WriteArgs;
use crate::engine::CoreComponent;
use crate::engine::wit::locks::FencedWriteRequest;
use crate::error::HostError;
use crate::output::{Outcome, note};
use std::io::Read;

/// Reads stdin and writes it to `FILE` of the cell if the holder still holds the lease at the epoch.
pub fn run(core: &mut CoreComponent, args: &WriteArgs) -> Outcome {
    let (holder, epoch) = required_fence(&args.fence, "a fenced write")?;
    let mut content = String::new();
    std::io::stdin().read_to_string(&mut content).map_err(|e| HostError::io("cannot read stdin", &e))?;
    let t = target(core, &args.target)?;
    let file = args.file.clone();
    let answer = t.store.transact(core, &t.env, &t.scope, |core, cell, now| {
        let request =
            FencedWriteRequest { holder: holder.clone(), epoch, file: file.clone(), content: content.clone() };
        core.fenced_write(&cell, now, request)
    })?;
    if !args.target.json {
        note(format!("wrote {} of {}/{} under epoch {epoch}", args.file, t.env, t.scope));
    }
    Ok(data(&t, [("file", args.file.clone().into()), ("epoch", epoch.into()), ("lock", answer["lock"].clone())]))
}
