//! Fuzz inputs for the stable runners (`core/tests/fuzz_corpus.rs`, `host-native/tests/boundary.rs`): the
//! committed corpus of a target and seeded mutations of it. Not used by cargo-fuzz, which mutates by itself.
//! The includer declares `mod rng` (`core/tests/sim/rng.rs`).

use crate::rng::Rng;
use std::path::Path;

/// Byte strings that matter to baton's parsers, inserted by the mutator.
pub(crate) const TOKENS: [&[u8]; 40] = [
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b":",
    b",",
    b"null",
    b"true",
    b"-1",
    b"0",
    b"1e400",
    b"18446744073709551616",
    b"\\u0000",
    b"\\ud800",
    b"..",
    b"/",
    b"\\",
    b"=",
    b"=2e",
    b"@{",
    b".lock",
    b"%2e",
    b"\n",
    b" ",
    b"\xff",
    b"\xc3\xa9",
    b"://u:p@",
    b"\"version\":3",
    b"\"version\":1",
    b"\"ledger\":[]",
    b"\"createdBy\":\"intent\"",
    b"T23:59:60Z",
    b"2028-02-29",
    b"refs/pull/",
    b"GITHUB_REF=",
    b"@event ",
    b"@git ",
    b"@o ",
    b"ms",
];

/// The committed corpus of `target`, sorted by file name.
pub(crate) fn corpus(target: &str) -> Vec<(String, Vec<u8>)> {
    // Both includers (core, host-native) sit one level below the repository root.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus").join(target);
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("the corpus {} cannot be read: {e}", dir.display()))
        .filter_map(Result::ok)
        .filter(|e| e.path().is_file())
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let data = std::fs::read(e.path()).unwrap_or_default();
            (name, data)
        })
        .collect();
    files.sort();
    files
}

/// One mutated input: a corpus file (or random bytes) with 1-4 edits.
pub(crate) fn mutate(rng: &mut Rng, corpus: &[(String, Vec<u8>)]) -> Vec<u8> {
    if corpus.is_empty() || rng.chance(50) {
        let len = rng.below(80) as usize;
        return (0..len).map(|_| rng.below(256) as u8).collect();
    }
    let mut data = corpus[rng.below(corpus.len() as u64) as usize].1.clone();
    for _ in 0..rng.range(1, 4) {
        let len = data.len() as u64;
        let at = rng.below(len + 1) as usize;
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len) as usize;
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len) as usize;
                data[i] = rng.below(256) as u8;
            }
            2 => {
                let token = TOKENS[rng.below(TOKENS.len() as u64) as usize];
                data.splice(at..at, token.iter().copied());
            }
            3 if len > 0 => {
                let end = (at + rng.range(1, 16) as usize).min(data.len());
                data.drain(at.min(end)..end);
            }
            4 if len > 0 => {
                let start = rng.below(len) as usize;
                let end = (start + rng.range(1, 32) as usize).min(data.len());
                let copy = data[start..end].to_vec();
                data.splice(at..at, copy);
            }
            5 => {
                let other = &corpus[rng.below(corpus.len() as u64) as usize].1;
                let from = rng.below(other.len() as u64 + 1) as usize;
                data.truncate(at);
                data.extend_from_slice(&other[from..]);
            }
            6 => data.truncate(at),
            _ => {
                // A digit run turned into a boundary value.
                let value: &[u8] = match rng.below(4) {
                    0 => b"0",
                    1 => b"18446744073709551615",
                    2 => b"9223372036854775807",
                    _ => b"-9223372036854775808",
                };
                data.splice(at..at, value.iter().copied());
            }
        }
    }
    data
}
