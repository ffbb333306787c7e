#!/usr/bin/env node
/**
 * Fails (exit 1) when a crate's module graph has a cycle, and prints each cycle.
 *
 *   node scripts/module-cycles.mjs [crate-src-dir ...]    (default: core/src host-native/src)
 *
 * A module is a file (`a/b.rs` or `a/b/mod.rs` is `a::b`). Module A depends on module B when A's code names
 * a path into B (`crate::b::X`, `super::X`, `self::x::Y`, in `use` or inline), outside `#[cfg(test)]`
 * blocks. A name reached through a parent's `pub use child::X` counts as a dependency on `child`, not on the
 * parent, and a parent's `mod child;` is no dependency: a re-export is the parent's face, not a use. Enough
 * for this project's code (no macros that name modules, no glob re-exports); not a Rust parser.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Every module of the crate rooted at `src`: module path ('' for the root) -> file text. */
function modules(src) {
  const out = new Map();
  const walk = (dir, prefix) => {
    for (const name of readdirSync(dir).sort()) {
      const file = path.join(dir, name);
      if (statSync(file).isDirectory()) {
        walk(file, [...prefix, name]);
      } else if (name.endsWith('.rs')) {
        const stem = name.slice(0, -3);
        const parts = ['lib', 'main', 'mod'].includes(stem) && (stem === 'mod' || prefix.length === 0) ? prefix : [...prefix, stem];
        if (stem === 'main' && prefix.length === 0) continue; // the binary is a crate of its own
        out.set(parts.join('::'), stripTests(readFileSync(file, 'utf8')));
      }
    }
  };
  walk(src, []);
  return out;
}

/** The text without comments, string literals and `#[cfg(test)]` items (a brace-balanced skip). */
function stripTests(text) {
  let t = text.replace(/\/\/[^\n]*/g, '').replace(/"(?:[^"\\]|\\.)*"/g, '""');
  for (;;) {
    const at = t.indexOf('#[cfg(test)]');
    if (at < 0) return t;
    const open = t.indexOf('{', at);
    const semi = t.indexOf(';', at);
    if (open < 0 || (semi >= 0 && semi < open)) {
      t = t.slice(0, at) + t.slice(semi + 1);
      continue;
    }
    let depth = 0;
    let i = open;
    for (; i < t.length; i++) {
      if (t[i] === '{') depth++;
      else if (t[i] === '}' && --depth === 0) break;
    }
    t = t.slice(0, at) + t.slice(i + 1);
  }
}

/** Expands `use a::{b, c::{d, e}}` groups into flat paths. */
function expand(prefix, body) {
  const parts = [];
  let depth = 0;
  let cur = '';
  for (const ch of body) {
    if (ch === '{') depth++;
    if (ch === '}') depth--;
    if (ch === ',' && depth === 0) {
      parts.push(cur);
      cur = '';
    } else cur += ch;
  }
  parts.push(cur);
  return parts.flatMap((p) => {
    const s = p.trim().replace(/\s+as\s+\w+$/, '');
    if (!s) return [];
    const brace = s.indexOf('{');
    if (brace >= 0) return expand(`${prefix}${s.slice(0, brace)}`, s.slice(brace + 1, s.lastIndexOf('}')));
    return [`${prefix}${s}`];
  });
}

/** The paths module `mod` names: `use` trees and inline `crate::`/`super::`/`self::` paths, made absolute. */
function pathsOf(mod, text, children) {
  const here = mod === '' ? [] : mod.split('::');
  const absolute = (p) => {
    const segs = p.split('::').map((s) => s.trim()).filter(Boolean);
    let base;
    if (segs[0] === 'crate') base = [];
    else if (segs[0] === 'self') base = [...here];
    else if (segs[0] === 'super') {
      base = [...here];
      while (segs[0] === 'super') {
        base.pop();
        segs.shift();
      }
      return [...base, ...segs];
    } else if (children.has([...here, segs[0]].join('::'))) {
      return [...here, ...segs]; // a child module named without `self::`
    } else return null; // an outside crate, std, or a local item
    return [...base, ...segs.slice(1)];
  };
  const out = [];
  for (const m of text.matchAll(/\buse\s+([^;]+);/g)) {
    const tree = m[1].replace(/\s+/g, ' ');
    const brace = tree.indexOf('{');
    const flat = brace >= 0 ? expand(tree.slice(0, brace), tree.slice(brace + 1, tree.lastIndexOf('}'))) : [tree];
    for (const p of flat) {
      const abs = absolute(p.replace(/::self$/, ''));
      if (abs) out.push({ abs, reexport: /\bpub(\([^)]*\))?\s+use\s*$/.test(text.slice(Math.max(0, m.index - 20), m.index + 3)) });
    }
  }
  for (const m of text.replace(/\buse\s+[^;]+;/g, '').matchAll(/(?<![\w:])\w+(?:::\w+)+/g)) {
    const abs = absolute(m[0]);
    if (abs) out.push({ abs, reexport: false });
  }
  return out;
}

function check(src) {
  const mods = modules(src);
  // Re-exports: `parent::Name` -> the module it comes from.
  const reexports = new Map();
  for (const [mod, text] of mods) {
    for (const { abs, reexport } of pathsOf(mod, text, mods)) {
      if (reexport && abs.length > 0) reexports.set([...(mod ? mod.split('::') : []), abs.at(-1)].join('::'), abs);
    }
  }
  /** The module an absolute path lands in: the longest module prefix, through re-exports. */
  const target = (abs, seen = 0) => {
    for (let n = abs.length; n >= 0; n--) {
      const prefix = abs.slice(0, n).join('::');
      if (!mods.has(prefix)) continue;
      const via = n < abs.length ? reexports.get([prefix, abs[n]].filter(Boolean).join('::')) : undefined;
      if (via && seen < 8) return target([...via, ...abs.slice(n + 1)], seen + 1);
      return prefix;
    }
    return null;
  };
  const edges = new Map([...mods.keys()].map((m) => [m, new Set()]));
  for (const [mod, text] of mods) {
    for (const { abs, reexport } of pathsOf(mod, text, mods)) {
      if (reexport) continue;
      const to = target(abs);
      if (to !== null && to !== mod) edges.get(mod).add(to);
    }
  }
  // Tarjan's strongly connected components; every component of more than one module is a cycle.
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const cycles = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v)) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        comp.push(w);
      } while (w !== v);
      if (comp.length > 1) cycles.push(comp.sort());
    }
  };
  for (const v of [...mods.keys()].sort()) if (!idx.has(v)) visit(v);
  return { cycles, edges, count: mods.size };
}

const dirs = process.argv.slice(2);
let failed = false;
for (const dir of dirs.length > 0 ? dirs : ['core/src', 'host-native/src']) {
  const { cycles, edges, count } = check(path.resolve(root, dir));
  for (const comp of cycles) {
    failed = true;
    const inside = comp.flatMap((a) => [...edges.get(a)].filter((b) => comp.includes(b)).map((b) => `${a || 'crate'} -> ${b || 'crate'}`));
    console.error(`module-cycles: ${dir}: a cycle through ${comp.map((m) => m || 'crate').join(', ')}\n  ${inside.join('\n  ')}`);
  }
  if (cycles.length === 0) console.error(`module-cycles: ${dir}: ${count} modules, no cycle`);
}
process.exit(failed ? 1 : 0);
