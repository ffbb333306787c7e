'use strict';
/**
 * The action's inputs as the `baton-lease` command line: the same flags, read by the core
 * (`command-line`), so `with: {ttl: 20m, wait: true}` means what `baton run --ttl 20m --wait` means.
 */
const path = require('node:path');
const { input, booleanInput } = require('./runner.cjs');

/** The npm package the action runs (`scripts/build-action.sh` packs host-node/ into it). */
const PKG = path.join(__dirname, 'dist', 'baton-lease');
const pkg = (file) => require(path.join(PKG, file));

/**
 * The default store: the repository's own git remote, authenticated with the workflow token (input
 * `github-token`, default `github.token`) when the server is reached over http(s).
 */
function defaultStore() {
  const repo = process.env.GITHUB_REPOSITORY;
  if (!repo) return undefined;
  const server = (process.env.GITHUB_SERVER_URL || 'https://github.com').replace(/\/+$/, '');
  const token = input('github-token');
  const url = `${server}/${repo}.git`;
  const authed = token && /^https?:\/\//.test(server) ? url.replace(/^(https?:\/\/)/, `$1x-access-token:${token}@`) : url;
  return `git:${authed}`;
}

/** The flags of the inputs env, scope (unless `withScope` is false), store, ttl, wait, wait-timeout, approved-by. */
function leaseFlags({ withScope = true } = {}) {
  const flags = [];
  for (const [name, flag] of [
    ['env', '--env'],
    ...(withScope ? [['scope', '--scope']] : []),
    ['ttl', '--ttl'],
    ['wait-timeout', '--wait-timeout'],
    ['approved-by', '--approved-by'],
  ]) {
    if (input(name) !== '') flags.push(flag, input(name));
  }
  const store = input('store') || defaultStore();
  if (store) flags.push('--store', store);
  if (booleanInput('wait', false)) flags.push('--wait');
  return flags;
}

module.exports = { PKG, pkg, leaseFlags, defaultStore };
