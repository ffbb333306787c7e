//! No native code from a cache: `baton` runs only the compiled core inside its own binary. Earlier builds
//! compiled the core once into `core-<hash>.cwasm` under `$BATON_CACHE_DIR`, else `$XDG_CACHE_HOME/baton`,
//! else `~/.cache/baton`, and later runs executed that file; whoever could write the folder (a CI cache
//! restored from a pull request's workflow) ran native code inside baton. Here every one of those folders
//! holds, under the names the old code used, compiled code replaced by `0xCC` (`int3`: the process dies with
//! SIGTRAP if it runs one byte of it), and `baton` must still answer, use its embedded code (no in-memory
//! compile notice) and write nothing there.

mod common;

use baton_native::engine::{COMPONENT, PRECOMPILED};
use common::{TempDir, envelope};
use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Output;

/// The cache file name the old code chose: a hash of the component bytes and of the engine's
/// compatibility hash (`DefaultHasher`, keyed by nothing, so the same in every process of this toolchain).
fn old_cache_name() -> String {
    let engine = wasmtime::Engine::new(&wasmtime::Config::new()).unwrap();
    let mut h = std::collections::hash_map::DefaultHasher::new();
    COMPONENT.hash(&mut h);
    engine.precompile_compatibility_hash().hash(&mut h);
    format!("core-{:016x}.cwasm", h.finish())
}

/// A compiled core whose header and metadata wasmtime accepts and whose machine code (`.text`) is all
/// `0xCC`: what the old code would have mapped and run from a poisoned cache.
fn poisoned_artifact() -> Vec<u8> {
    use object::read::elf::ElfFile64;
    use object::{Endianness, Object, ObjectSection};
    let mut bytes = PRECOMPILED.to_vec();
    let (start, len) = {
        let elf = ElfFile64::<Endianness>::parse(&bytes[..]).expect("the embedded artifact is an ELF file");
        let text = elf.section_by_name(".text").expect("it has machine code");
        text.file_range().expect("the code is in the file")
    };
    assert!(len > 1000, "a real body of code, {len} bytes");
    let (start, len) = (usize::try_from(start).unwrap(), usize::try_from(len).unwrap());
    bytes[start..start + len].fill(0xCC);
    bytes
}

/// The three folders the old code cached into, under one temp dir that is also `$HOME`.
struct Caches {
    t: TempDir,
}

impl Caches {
    fn new(name: &str) -> Self {
        let t = TempDir::new(&format!("no-cache-{name}"));
        std::fs::create_dir_all(t.0.join("home")).unwrap();
        Self { t }
    }

    fn home(&self) -> PathBuf {
        self.t.0.join("home")
    }

    /// `$HOME/.cache/baton`, `$XDG_CACHE_HOME/baton`, `$BATON_CACHE_DIR`.
    fn folders(&self) -> [PathBuf; 3] {
        [self.home().join(".cache/baton"), self.t.0.join("xdg/baton"), self.t.0.join("baton-cache")]
    }

    /// Fills each folder with what the old code would have run: the poisoned artifact under the exact name it
    /// looked up, and `0xCC` from end to end under other names of its pattern.
    fn plant(&self) {
        let poisoned = poisoned_artifact();
        for dir in self.folders() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(old_cache_name()), &poisoned).unwrap();
            for name in ["core-0000000000000000.cwasm", "core-ffffffffffffffff.cwasm"] {
                std::fs::write(dir.join(name), vec![0xCC; 64 * 1024]).unwrap();
            }
        }
    }

    /// Every file under the three folders (and the rest of `$HOME`) with its bytes.
    fn files(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let mut found = BTreeMap::new();
        for dir in [self.home(), self.t.0.join("xdg"), self.t.0.join("baton-cache")] {
            walk(&dir, &mut found);
        }
        found
    }

    /// `baton args` in the temp dir with a dir store there, `$HOME` in the temp dir, and `$BATON_CACHE_DIR`
    /// and `$XDG_CACHE_HOME` set to their folders or unset.
    fn baton(&self, args: &[&str], cache_dir: bool, xdg: bool) -> Output {
        let mut cmd = self.t.baton(args);
        cmd.env("HOME", self.home()).env_remove("BATON_CACHE_DIR").env_remove("XDG_CACHE_HOME");
        if cache_dir {
            cmd.env("BATON_CACHE_DIR", self.t.0.join("baton-cache"));
        }
        if xdg {
            cmd.env("XDG_CACHE_HOME", self.t.0.join("xdg"));
        }
        cmd.output().unwrap()
    }

    /// `baton scope` and `baton lock acquire` / `lock release` with each folder in turn being the one the
    /// old code would have used; asserts every answer.
    fn use_baton(&self, round: u32) {
        for (cache_dir, xdg) in [(true, true), (false, true), (false, false)] {
            let out = self.baton(&["scope", "--branch", "x"], cache_dir, xdg);
            assert_ran(&out, "scope");
            assert_eq!(String::from_utf8_lossy(&out.stdout), "branch-x\n");

            let out = self.baton(&["scope", "--branch", "feat/search", "--pr", "7", "--json"], cache_dir, xdg);
            assert_ran(&out, "scope --json");
            assert_eq!(envelope(&out)["context"]["scope"], "pr-7");

            let holder = format!("h-{round}-{cache_dir}-{xdg}");
            let out =
                self.baton(&["lock", "acquire", "--scope", "pr-1", "--holder", &holder, "--json"], cache_dir, xdg);
            assert_ran(&out, "lock acquire");
            let lock = envelope(&out);
            assert_eq!((lock["ok"].clone(), lock["lock"]["holder"].clone()), (true.into(), holder.clone().into()));
            let epoch = lock["lock"]["epoch"].as_u64().expect("an epoch");
            let out = self.baton(
                &["lock", "release", "--scope", "pr-1", "--holder", &holder, "--epoch", &epoch.to_string(), "--json"],
                cache_dir,
                xdg,
            );
            assert_ran(&out, "lock release");
        }
    }
}

/// Exited 0 (a SIGTRAP from running planted code has no exit code) and loaded the embedded code itself.
fn assert_ran(out: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "baton {what}: {:?}\n{stderr}", out.status);
    assert!(!stderr.contains("compiled it in memory"), "baton {what} used the code inside the binary: {stderr}");
}

fn walk(dir: &Path, found: &mut BTreeMap<PathBuf, Vec<u8>>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, found);
        } else {
            found.insert(path.clone(), std::fs::read(&path).unwrap());
        }
    }
}

#[test]
fn baton_answers_and_runs_nothing_from_a_poisoned_cache() {
    let caches = Caches::new("poisoned");
    caches.plant();
    let planted = caches.files();
    assert_eq!(planted.len(), 9);

    caches.use_baton(1);
    // Whatever a run left under those folders, corrupted the same way before the next run.
    let written: Vec<PathBuf> = caches.files().into_keys().filter(|p| !planted.contains_key(p)).collect();
    for path in &written {
        let len = std::fs::metadata(path).unwrap().len();
        std::fs::write(path, vec![0xCC; usize::try_from(len).unwrap()]).unwrap();
    }
    caches.use_baton(2);

    assert_eq!(written, Vec::<PathBuf>::new(), "baton wrote nothing under the cache folders");
    assert!(caches.files() == planted, "baton left every planted file as it was");
}

#[test]
fn baton_writes_nothing_under_the_old_cache_folders() {
    let caches = Caches::new("clean");
    caches.use_baton(1);
    assert_eq!(caches.files().into_keys().collect::<Vec<_>>(), Vec::<PathBuf>::new(), "$HOME stays empty");
    for dir in caches.folders() {
        assert!(!dir.exists(), "{} was not created", dir.display());
    }
}

#[test]
fn the_embedded_core_is_used_whatever_wasmtime_reads_from_the_environment() {
    // wasmtime's default configuration reads `WASMTIME_BACKTRACE_DETAILS`, which changes how code is compiled.
    let caches = Caches::new("env");
    let out = caches.t.baton(&["scope", "--branch", "x"]).env("WASMTIME_BACKTRACE_DETAILS", "1").output().unwrap();
    assert_ran(&out, "scope with WASMTIME_BACKTRACE_DETAILS=1");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "branch-x\n");
}

#[test]
fn the_poisoned_artifact_is_what_wasmtime_would_run() {
    // The control for the test above: wasmtime accepts the planted file as a compiled core (its header,
    // version and settings fit this engine), so only not reading it keeps baton safe. Loading is as far as
    // this goes: instantiating would run the `0xCC` code. (The engine of the binary: its settings are part of
    // what an artifact must match.)
    let engine = wasmtime::Engine::new(&baton_native::engine::config::run()).unwrap();
    let poisoned = poisoned_artifact();
    #[allow(unsafe_code)]
    // SAFETY: deserializing maps the code without running any of it; nothing is instantiated.
    let loaded = unsafe { wasmtime::component::Component::deserialize(&engine, &poisoned) };
    assert!(loaded.is_ok(), "{:?}", loaded.err());
    assert_ne!(poisoned, PRECOMPILED);
}
