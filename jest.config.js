/**
 * Two projects: `unit` (pure code, no servers) and `integration` (real Temporal dev server, real MinIO and
 * real HTTP servers, started by the global setup unless TEMPORAL_ADDRESS / S3_ENDPOINT name running ones).
 */
const transform = { '^.+\\.ts$': ['@swc/jest'] };

/** @type {import('jest').Config} */
module.exports = {
  testTimeout: 180000,
  maxWorkers: 2,
  testSequencer: '<rootDir>/test/support/sequencer.mjs',
  projects: [
    {
      displayName: 'unit',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/unit/**/*.test.ts'],
    },
    {
      displayName: 'integration',
      testEnvironment: 'node',
      transform,
      testMatch: ['<rootDir>/test/integration/**/*.test.ts'],
      globalSetup: '<rootDir>/test/support/global-setup.ts',
      globalTeardown: '<rootDir>/test/support/global-teardown.ts',
    },
  ],
};
