#!/usr/bin/env node
'use strict';
// `npx baton-lease run -- ./deploy.sh`: see js/command.cjs and `baton-lease --help`.
require('../js/command.cjs')
  .main(process.argv.slice(2))
  .then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(`error INTERNAL: baton-lease failed: ${e && e.stack ? e.stack : String(e)}\n`);
      process.exitCode = 1;
    },
  );
