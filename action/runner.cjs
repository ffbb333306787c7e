'use strict';
/**
 * What the GitHub Actions runner gives a JavaScript action and takes from it: inputs (`INPUT_<NAME>`),
 * saved state (`GITHUB_STATE` in, `STATE_<name>` in the post step), outputs (`GITHUB_OUTPUT`) and variables
 * for later steps (`GITHUB_ENV`, `GITHUB_PATH`), in the runner's file-command format (`name<<delimiter` blocks). No
 * dependency: the action runs with nothing but Node and this repository's files.
 */
const fs = require('node:fs');
const { randomBytes } = require('node:crypto');

/** Input `name` as the runner passes it (`INPUT_` + upper case, spaces as `_`), trimmed; '' when unset. */
function input(name) {
  return (process.env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] ?? '').trim();
}

/** A boolean input: true, false, or `fallback` when unset (anything else is a usage error). */
function booleanInput(name, fallback) {
  const v = input(name).toLowerCase();
  if (v === '') return fallback;
  if (v === 'true' || v === 'false') return v === 'true';
  throw new Error(`input \`${name}\` must be true or false, got \`${input(name)}\``);
}

/** Appends `name=value` to the file behind variable `fileVar` (GITHUB_STATE, GITHUB_OUTPUT, GITHUB_ENV). */
function appendTo(fileVar, name, value) {
  const file = process.env[fileVar];
  if (!file) throw new Error(`${fileVar} is not set: this must run as a step of a GitHub Actions job`);
  const delimiter = `baton_${randomBytes(8).toString('hex')}`;
  fs.appendFileSync(file, `${name}<<${delimiter}\n${String(value)}\n${delimiter}\n`);
}

/** Saves state for the post step (read back with `state`). */
const saveState = (name, value) => appendTo('GITHUB_STATE', name, value);
/** State the main step saved, or ''. */
const state = (name) => process.env[`STATE_${name}`] ?? '';
/** Sets output `name` of the step. */
const setOutput = (name, value) => appendTo('GITHUB_OUTPUT', name, value);
/** Exports `name` to every later step of the job. */
const exportVariable = (name, value) => appendTo('GITHUB_ENV', name, value);

/** Puts `dir` on PATH for every later step of the job (GITHUB_PATH: one directory a line). */
function addPath(dir) {
  const file = process.env.GITHUB_PATH;
  if (file) fs.appendFileSync(file, `${dir}\n`);
}

module.exports = { input, booleanInput, saveState, state, setOutput, exportVariable, addPath };
