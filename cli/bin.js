#!/usr/bin/env node
// `npx selfplay ...` from a clone: runs the TypeScript CLI through tsx.
require('tsx/cjs');
require('./main.ts');
