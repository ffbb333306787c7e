//! The core component imports nothing, and every decision the binary makes goes through it.

use baton_native::engine::{COMPONENT, CoreComponent};

/// The names of everything a component imports, compiled in memory with the engine settings `baton` runs
/// the core with (the binary itself carries no compiler: it loads the code `build.rs` compiled).
fn imports_of(bytes: &[u8]) -> wasmtime::Result<Vec<String>> {
    let engine = wasmtime::Engine::new(&baton_native::engine::config::run())?;
    let component = wasmtime::component::Component::new(&engine, bytes)?;
    Ok(component.component_type().imports(&engine).map(|(name, _)| name.to_owned()).collect())
}

#[test]
fn the_core_component_has_no_imports() {
    let imports = imports_of(COMPONENT).expect("the embedded component compiles");
    assert!(imports.is_empty(), "the core component must import nothing, it imports {imports:?}");
}

#[test]
fn the_import_check_sees_an_import_when_there_is_one() {
    let with_import =
        wat::parse_str(r#"(component (import "wasi:cli/environment@0.2.6" (instance)))"#).expect("valid WAT");
    assert_eq!(imports_of(&with_import).unwrap(), vec!["wasi:cli/environment@0.2.6".to_owned()]);
}

#[test]
fn the_component_answers_like_the_native_core() {
    let mut core = CoreComponent::load().expect("loads");
    let native: Vec<(String, u8)> =
        baton_core::ErrorCode::ALL.iter().map(|c| (c.as_str().to_owned(), c.exit_code())).collect();
    let codes = core.error_codes().unwrap();
    assert_eq!(codes.iter().map(|c| (c.name.clone(), c.exit)).collect::<Vec<_>>(), native);
    assert_eq!(core.scope_for("feat/search", None, None).unwrap(), "branch-feat-search");
    let cell = serde_json::json!({"env": "e", "scope": "s", "files": {"lock.json": "{"}});
    let err = core.lock_decide(&cell, 0, &baton_native::engine::wit::locks::LockOp::LockRead).unwrap_err();
    assert_eq!(err.code, "LOCK_CORRUPT");
}
