// @ts-check
import eslint from '@eslint/js';
import tseslint from 'typescript-eslint';

/** Import groups the layering rules below forbid, per folder (see docs/architecture.md). */
const NODE_APIS = {
  group: ['node:*', 'fs', 'path', 'crypto', 'http', 'https', 'os', 'child_process'],
  message: 'No Node APIs here: workflows replay deterministically, and contracts are imported by workflows.',
};
const NODE_IO = {
  group: [
    'node:fs',
    'node:fs/*',
    'node:http',
    'node:https',
    'node:net',
    'node:child_process',
    'fs',
    'http',
    'https',
  ],
  message: 'Scoring is pure: no I/O.',
};
const IO_CLIENTS = {
  group: ['openai', '@aws-sdk/*', '**/clients', '**/clients/**'],
  message: 'No I/O clients here: only activities call models, trainers and storage.',
};
const ACTIVITY_CODE = {
  group: ['**/activities', '**/activities/**'],
  message: 'Workflows and contracts must not depend on activity code (types for proxyActivities excepted).',
};
const WORKFLOW_CODE = {
  group: ['**/workflows', '**/workflows/**'],
  message: 'Import shared messages from contracts/, not from the workflow code.',
};
const APP_CODE = {
  group: ['**/cli/**', '**/workers/**', '**/test/**', '**/bench/**'],
  message: 'Library code must not depend on the CLI, workers, tests or benchmarks.',
};
const JUDGES = {
  group: ['**/judges/**'],
  message: 'Scoring is pure: judges that ask a model live in activities/judges/.',
};
const TEMPORAL = { group: ['@temporalio/*'], message: 'Scoring is pure: no Temporal APIs.' };

export default tseslint.config(
  { ignores: ['node_modules/**', '.tools/**', '.selfplay/**', 'coverage/**', 'cli/bin.js', '**/.venv/**'] },
  eslint.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflow code is replayed: it must stay deterministic and free of Node APIs, I/O and activity code (only
    // the activities' types, for proxyActivities).
    files: ['workflows/**/*.ts'],
    rules: {
      'no-restricted-imports': 'off',
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [NODE_APIS, IO_CLIENTS, { ...ACTIVITY_CODE, allowTypeImports: true }] },
      ],
      'no-restricted-globals': ['error', 'setTimeout', 'setInterval', 'fetch', 'process'],
    },
  },
  {
    // Contracts are shared by workflows, activities and the CLI, so they depend on none of them.
    files: ['contracts/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [NODE_APIS, IO_CLIENTS, ACTIVITY_CODE, WORKFLOW_CODE, APP_CODE] },
      ],
    },
  },
  {
    // Activities take their messages from contracts/, never from the workflow code that sends them.
    files: ['activities/**/*.ts'],
    ignores: ['activities/scoring/**'],
    rules: { '@typescript-eslint/no-restricted-imports': ['error', { patterns: [WORKFLOW_CODE, APP_CODE] }] },
  },
  {
    // Scoring is pure: text in, numbers out; judges that ask a model live in activities/judges/.
    files: ['activities/scoring/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        { patterns: [WORKFLOW_CODE, APP_CODE, NODE_IO, IO_CLIENTS, JUDGES, TEMPORAL] },
      ],
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['**/*.js'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly' } },
  },
);
